"""Lesson 07's explorer: the encoder-decoder's shapes as a table, for sizes the learner picks.

The lesson shows the whole diagram (`encoder_decoder_diagram`, 9.1 × 5.75 in) once, at fixed
sizes. As an explorer, under its six controls, that diagram was 1 052 px tall, twice what a
1366 × 768 laptop screen shows of a notebook beside JupyterLab's file browser (522 px): a
slider and the shapes it changes could not be seen at once. The table lists the tensors the
diagram labels, in its order (bottom-up, encoder then decoder), under the diagram's names, in
3 inches.
"""
from __future__ import annotations

from .encoder_decoder import _B, _D, _S, _T, EncoderDecoderDiagram, _fmt, _header

__all__: list = []     # the explorer's figure: lesson 07 reaches it through `shapes_explorer`

_TOP, _ROW = 0.765, 0.12     # axes fractions: the first row's top, one row's height


class ShapeTable(EncoderDecoderDiagram):
    """The shapes of a real forward pass (`trace_shapes`) of an encoder-decoder of the sizes
    given, as two columns of (stage, shape): encoder left, decoder right.

    Slider values as `EncoderDecoderDiagram`'s: batch, n_src, n_tgt, d_model, h, tgt_vocab.
    What moves: the shapes and the headline; the stage names stay in the frame.
    """

    figsize = (9.1, 3.0)

    def _cells(self, **values):
        """([(stage, shape)] of the encoder, the same of the decoder)."""
        s, d_ff = self._shapes(**values)
        B, S, T, D = _B, _S, _T, _D
        encoder = [("source ids (English)", _fmt(s["src"], (B, S))),
                   ("embedding + positional encoding", _fmt(s["src_in"], (B, S, D))),
                   ("self-attention weights", _fmt(s["self_weights"], (B, "h", S, S))),
                   ("feed-forward, hidden width", f"d_ff={d_ff}"),
                   ("memory (encoder output)", _fmt(s["memory"], (B, S, D)))]
        decoder = [("target ids, shifted right (German)", _fmt(s["tgt"], (B, T))),
                   ("embedding + positional encoding", _fmt(s["tgt_in"], (B, T, D))),
                   ("masked self-attention weights", _fmt(s["masked_weights"], (B, "h", T, T))),
                   ("cross-attention weights (K, V: memory)", _fmt(s["cross_weights"], (B, "h", T, S))),
                   ("decoder output", _fmt(s["decoder_out"], (B, T, D))),
                   ("logits, then softmax", _fmt(s["logits"], (B, T, "V")))]
        return encoder, decoder

    def build(self, fig, **values):
        ax = self.ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")
        for spine in ax.spines.values():    # LivePlot draws an Axes' spines over what moved
            spine.set_visible(False)
        self.header = ax.text(0.01, 0.97, _header(**values), fontsize=10.5, weight="bold", va="top")
        self.shape_texts = []
        encoder, decoder = self._cells(**values)
        for x, title, cells in ((0.01, f"encoder ({self.n_layers} layers)", encoder),
                                (0.51, f"decoder ({self.n_layers} layers)", decoder)):
            ax.text(x, _TOP + 0.045, title, fontsize=10, weight="bold", va="bottom")
            for k, (stage, shape) in enumerate(cells):
                y = _TOP - k * _ROW
                ax.text(x, y, stage, fontsize=9, va="top")
                self.shape_texts.append(ax.text(x + 0.02, y - _ROW / 2.1, shape, fontsize=9,
                                                family="monospace", va="top", color="#1f1f1f"))
        return [*self.shape_texts, self.header]

    def update(self, **values):
        encoder, decoder = self._cells(**values)
        for text, (_, shape) in zip(self.shape_texts, encoder + decoder):
            text.set_text(shape)
        self.header.set_text(_header(**values))

    def describe(self, **values):
        encoder, decoder = self._cells(**values)
        _, d_ff = self._shapes(**values)
        said = lambda cells: "; ".join(f"{stage} {shape}" for stage, shape in cells)     # noqa: E731
        shape = dict(encoder + decoder)
        result = (f"Cross-attention weights {shape['cross-attention weights (K, V: memory)']}, memory "
                  f"{shape['memory (encoder output)']}, logits {shape['logits, then softmax']}.")
        return dict(result=result, text=(
            f"The shapes of a real forward pass of an encoder-decoder ({self.n_layers} layers each, "
            f"d_ff={d_ff}) at {_header(**values)}. Encoder: {said(encoder)}. Decoder: {said(decoder)}."))
