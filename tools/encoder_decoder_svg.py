"""Draw lesson 07's encoder-decoder diagram into assets/encoder_decoder_shapes.svg.

    python tools/encoder_decoder_svg.py            # write the SVG
    python tools/encoder_decoder_svg.py --check    # exit 1 if the committed SVG is out of date

The diagram is `course_lib.viz.encoder_decoder_diagram()` at its defaults, lesson 07's
sizes (batch 2, n_src 5, n_tgt 3, d_model 32, h 4 so d_k 8, d_ff 128, V 40: every size
different). Its text is drawn as paths (matplotlib's default), so a browser shows it
exactly as matplotlib laid it out, inside its boxes. The figure's description (what a
screen reader needs; the lesson's image has it as its alt too) is written into the SVG's
metadata, where `--check` (and tests/test_widgets_encoder_decoder.py) compares it with
the description the code gives now.
"""
from __future__ import annotations

import argparse
import re
import sys
from html import unescape
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "assets" / "encoder_decoder_shapes.svg"


def diagram():
    """(Figure, its description text) at the lesson's sizes."""
    import matplotlib

    matplotlib.use("Agg")
    from course_lib.viz import encoder_decoder_diagram
    from course_lib.viz.describe import description

    fig = encoder_decoder_diagram()
    return fig, description(fig).text


def committed_description(path=SVG):
    """The description written into the SVG's metadata (dc:description), or None."""
    found = re.search(r"<dc:description>(.*?)</dc:description>", path.read_text(encoding="utf-8"), re.S)
    return unescape(found.group(1)) if found else None


def write(path=SVG):
    fig, text = diagram()
    # svg.hashsalt: the same ids on every run, so a redraw with nothing changed is no diff
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "encoder-decoder", "svg.fonttype": "path"}):
        fig.savefig(path, format="svg", metadata={"Title": "The encoder-decoder with the shape of every tensor",
                                                  "Description": text, "Date": None})
    return text


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="only compare the committed SVG's description")
    args = p.parse_args(argv)
    if args.check:
        _, text = diagram()
        if committed_description() != text:
            print(f"{SVG.relative_to(ROOT)} is out of date: run python tools/encoder_decoder_svg.py")
            return 1
        print(f"{SVG.relative_to(ROOT)} is up to date")
        return 0
    write()
    print(f"wrote {SVG.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
