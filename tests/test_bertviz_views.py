"""Offline bertviz views (course_lib/viz/bertviz_views/): the HTML carries its own d3 and
jQuery and fetches nothing, and says in words what the view shows (its strongest links).

The browser tests open the views in headless Chromium with every non-file request
aborted and check that they draw their SVG elements without page errors, and that the
text alternative is read by axe-core and the accessibility tree as a named table.
"""
import os
import re
from pathlib import Path

import pytest
import torch

from course_lib.viz.bertviz_views import BertvizView, collect_queries_keys, offline_libraries, show
from course_lib.viz.bertviz_views.offline import split_bertviz_html
from course_lib.nn.models import DecoderOnlyLM, EncoderDecoder, collect_attention

CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
URL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)


def _attn(layers=2, h=3, n_q=4, n_k=4, batch=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.softmax(torch.randn(batch, h, n_q, n_k, generator=g), -1) for _ in range(layers)]


def _assert_offline(html):
    assert "cdnjs" not in html
    assert not URL.search(html), "the view references a remote resource"
    assert "require.min.js" not in html


def test_libraries_come_from_the_installed_packages():
    d3, jq = offline_libraries()
    assert "d3js.org v5.7.0" in d3[:100]
    assert "jQuery v3.7.1" in jq[:100]


@pytest.mark.parametrize("view", ["head", "model"])
def test_self_attention_views_are_self_contained(view):
    v = show(view, _attn(), tokens=["a", "b", "c", "d"])
    assert isinstance(v, BertvizView) and v.view == view
    html = v.data
    _assert_offline(html)
    d3, jq = offline_libraries()
    assert d3 in html and jq in html            # inlined, whole
    assert html.count(v.vis_id) >= 2            # the div, and the shim waiting for it
    assert html.count("<script type=") == 1 and html.count("</script>") == 1
    assert v._repr_html_() == html              # what the notebook stores
    assert html.count('"attn"') == 1            # bertviz's own HTML carries the data twice


def test_numbers_are_short():
    attn = [torch.full((1, 1, 2, 2), 0.5 + 1e-7), torch.tensor([[[[0.007, 0.993], [1.0, 0.0]]]])]
    html = show("head", attn, tokens=["a", "b"], decimals=3).data
    assert "[[[[0.5, 0.5], [0.5, 0.5]]], [[[0.007, 0.993], [1.0, 0.0]]]]" in html


def test_attention_is_rounded_and_batch_index_picks_the_example():
    attn = _attn(batch=2)
    v = show("head", attn, tokens=list("abcd"), batch_index=1, decimals=3)
    expected = attn[0][1, 0, 0].double().round(decimals=3).tolist()
    assert str(expected)[1:-1].replace(" ", "") in v.data.replace(" ", "")


def test_encoder_decoder_dict_gives_three_attention_kinds():
    torch.manual_seed(0)
    model = EncoderDecoder(11, 13, d_model=16, h=2, d_ff=32, n_enc=2, n_dec=2, dropout=0.0)
    src, tgt = torch.randint(0, 11, (1, 5)), torch.randint(0, 13, (1, 3))
    attn = collect_attention(model, src, tgt)
    for view in ("head", "model"):
        html = show(view, attn, src_tokens=list("vwxyz"), tgt_tokens=list("abc")).data
        for kind in ("Encoder", "Decoder", "Cross"):
            assert f">{kind}</option>" in html
        _assert_offline(html)


def test_decoder_only_and_neuron_view_from_a_course_model():
    torch.manual_seed(0)
    model = DecoderOnlyLM(10, d_model=16, h=2, d_ff=32, n_layers=2, max_len=8)
    x = torch.randint(0, 10, (1, 6))
    attn = collect_attention(model, x)["decoder"]
    qk = collect_queries_keys(model, x)
    assert len(qk["queries"]) == len(qk["keys"]) == 2
    assert qk["queries"][0].shape == (1, 2, 6, 8)
    # q·kᵀ/√d_k, masked and softmaxed, is the attention the model used
    q, k = qk["queries"][1], qk["keys"][1]
    scores = (q @ k.transpose(-2, -1) / 8 ** 0.5).masked_fill(~torch.ones(6, 6).tril().bool(), -torch.inf)
    torch.testing.assert_close(torch.softmax(scores, -1), attn[1])
    v = show("neuron", attn, tokens=list("abcdef"), **qk)
    assert '"bidirectional": false' in v.data      # causal: bertviz greys out the future
    _assert_offline(v.data)


def test_hugging_face_attention_tuple_is_accepted():
    attn = tuple(_attn(layers=3))            # what outputs.attentions is
    assert show("model", attn, tokens=list("abcd")).view == "model"


def test_tokens_that_close_a_script_tag_cannot_break_out():
    v = show("head", _attn(), tokens=["</script>", "<b>", "c", "d"])
    assert v.data.count("</script>") == 1


@pytest.mark.parametrize("kwargs, message", [
    (dict(view="graph", attention=_attn(), tokens=list("abcd")), "view must be one of"),
    (dict(view="head", attention=_attn(), tokens=list("abc")), "tokens has 3 entries but the attention has 4"),
    (dict(view="head", attention=_attn(), tokens=None), "tokens is required"),
    (dict(view="head", attention=torch.rand(1, 2, 4, 4), tokens=list("abcd")), "non-empty list"),
    (dict(view="head", attention=[torch.rand(2, 4, 4)], tokens=list("abcd")), r"attention\[0\] must be"),
    (dict(view="head", attention=_attn(n_q=3), tokens=list("abcd")), "must be square"),
    (dict(view="head", attention=_attn(), tokens=list("abcd"), batch_index=1), "batch_index=1 is out of range"),
    (dict(view="model", attention=_attn(), tokens=list("abcd"), display_mode="grey"), "display_mode"),
    (dict(view="neuron", attention=_attn(), tokens=list("abcd")), "needs queries and keys"),
    (dict(view="head", attention={"encoder": _attn(), "cross": _attn()}, tokens=list("abcd")),
     "pass src_tokens and tgt_tokens"),
    (dict(view="head", attention={"encoder": _attn(), "cross": _attn()}, src_tokens=list("abcd")),
     "tgt_tokens is required"),
    (dict(view="head", attention={"memory": _attn()}, tokens=list("abcd")), "unknown keys"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        show(**kwargs)


def test_unexpected_bertviz_layout_is_reported():
    with pytest.raises(RuntimeError, match="bertviz 1.4.1"):
        split_bertviz_html("<div>no script here</div>")


def test_the_old_import_still_works():
    """A lesson saved before the move to course_lib.viz (a learner's edited copy) still runs."""
    from course_lib import bertviz_views as old
    assert old.show is show and old.collect_queries_keys is collect_queries_keys


# --------------------------------------------------------------------------- in words
def _table_rows(html):
    """{row label: [cells]} of the text alternative's table(s)."""
    rows = re.findall(r'<tr><th scope="row">(.*?)</th>(.*?)</tr>', html)
    return {label: re.findall(r"<td>(.*?)</td>", cells) for label, cells in rows}


def test_the_head_view_says_its_strongest_links_for_the_layer_and_head_it_opens_on():
    attn = [torch.zeros(1, 2, 3, 3) for _ in range(2)]
    attn[1][0, 1] = torch.tensor([[0.1, 0.7, 0.2], [0.6, 0.3, 0.1], [0.25, 0.25, 0.5]])
    attn[1][0, 0] = torch.eye(3)                       # another head: not the one shown
    v = show("head", attn, tokens=["it", "animal", "tired"], layer=1, heads=[1])
    assert "opens on layer 1, head 1" in v.text
    assert "it → animal 0.70" in v.text and "animal → it 0.60" in v.text
    rows = _table_rows(v.data)
    assert rows == {"it": ["animal 0.70", "tired 0.20"], "animal": ["it 0.60", "animal 0.30"],
                    "tired": ["tired 0.50", "it 0.25"]}
    assert v.text in repr(v)                           # the output's text/plain
    # all heads shown: their mean, as the drawn lines add up
    mean = show("head", attn, tokens=["it", "animal", "tired"], layer=1)
    assert "the mean of both heads" in mean.text and _table_rows(mean.data)["it"][0] == "it 0.55"


def test_masked_weights_are_not_links_and_repeated_tokens_get_their_position():
    attn = [torch.tensor([[[[1.0, 0.0, 0.0], [0.6, 0.4, 0.0], [0.2, 0.3, 0.5]]]])]
    v = show("head", attn, tokens=["the", "cat", "the"])
    rows = _table_rows(v.data)
    assert rows["the (0)"] == ["the (0) 1.00", ""]      # the future (weight 0) is no link
    assert rows["the (2)"] == ["the (2) 0.50", "cat 0.30"]
    # the first row's 1.00 is the mask's doing, not the model's: not among the strongest links
    assert "Strongest links — cat → the (0) 0.60, the (2) → the (2) 0.50, cat → cat 0.40." in v.text


def test_a_sharp_head_is_a_link_and_a_view_with_few_tokens_is_described():
    """One-hot rows are what a trained head often gives: links, not noise (only the first row
    of *causal* attention is the mask's doing). Two source words, one layer: still described."""
    sharp = [torch.tensor([[[[0.0, 1.0], [1.0, 0.0]]]])]              # not causal: a real link
    v = show("head", sharp, tokens=["twenty", "one"])
    assert "twenty → one 1.00" in v.text and "one → twenty 1.00" in v.text
    m = show("model", {"encoder": sharp, "decoder": [torch.tensor([[[[1.0, 0.0], [0.0, 1.0]]]])],
                       "cross": sharp}, src_tokens=["twenty", "one"], tgt_tokens=["<bos>", "einund"])
    assert "1 layer × 1 head;" in m.text and "layer 0: head 0: einund → einund 1.00" in m.text


def test_byte_level_pieces_are_named_without_their_leading_space():
    attn = [torch.tensor([[[[0.5, 0.5], [0.9, 0.1]]]])]
    v = show("head", attn, tokens=["The", " animal"])
    assert "Strongest links — animal → The 0.90" in v.text and "\n  animal: The 0.90, animal 0.10" in v.text
    assert "  animal" not in v.text.replace("\n  animal:", "")


def test_every_kind_of_an_encoder_decoder_is_described():
    torch.manual_seed(0)
    model = EncoderDecoder(11, 13, d_model=16, h=2, d_ff=32, n_enc=2, n_dec=2, dropout=0.0)
    src, tgt = torch.randint(0, 11, (1, 5)), torch.randint(0, 13, (1, 3))
    attn = collect_attention(model, src, tgt)
    v = show("head", attn, src_tokens=list("vwxyz"), tgt_tokens=list("abc"), layer=1)
    for kind in ("Encoder", "Decoder", "Cross"):
        assert f"{kind}: each token on the left" in v.text
    cross = attn["cross"][1][0].mean(0)                 # (n_tgt, n_src), layer 1
    best = int(cross[2].argmax())
    assert f"  c: {'vwxyz'[best]} {cross[2, best].item():.2f}" in v.text


def test_the_model_view_gives_each_layers_strongest_links():
    attn = [torch.full((1, 2, 2, 2), 0.5) for _ in range(3)]
    attn[2][0, 1] = torch.tensor([[0.1, 0.9], [0.5, 0.5]])
    v = show("model", attn, tokens=["a", "b"])
    assert "3 layers × 2 heads" in v.text and "layer 2, head 1: a → b 0.90" in v.text
    assert _table_rows(v.data)["layer 2"][0] == "head 1: a → b 0.90"



# --------------------------------------------------------------------------- browser
@pytest.mark.slow
@pytest.mark.browser
def test_views_draw_their_svg_in_chromium_with_the_network_off(tmp_path):
    """Every view, opened from a file in headless Chromium with every request that is
    not a local file aborted: SVG drawn, no page error, nothing but file:// requested."""
    sync_api = pytest.importorskip("playwright.sync_api")
    import axe_support
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    torch.manual_seed(0)
    model = EncoderDecoder(11, 13, d_model=16, h=2, d_ff=32, n_enc=2, n_dec=2, dropout=0.0)
    src, tgt = torch.randint(0, 11, (1, 5)), torch.randint(0, 13, (1, 3))
    encdec = collect_attention(model, src, tgt)
    lm = DecoderOnlyLM(10, d_model=16, h=2, d_ff=32, n_layers=2, max_len=8)
    x = torch.randint(0, 10, (1, 6))
    views = {
        "head": show("head", _attn(), tokens=list("abcd")),
        "model": show("model", _attn(), tokens=list("abcd")),
        "head_encdec": show("head", encdec, src_tokens=list("vwxyz"), tgt_tokens=list("abc")),
        "model_encdec": show("model", encdec, src_tokens=list("vwxyz"), tgt_tokens=list("abc")),
        "neuron": show("neuron", collect_attention(lm, x)["decoder"], tokens=list("abcdef"),
                       **collect_queries_keys(lm, x)),
    }
    # Two views in one page must not interfere (a notebook shows several).
    both = tmp_path / "two_views.html"
    both.write_text(f"<html lang=\"en\"><head><title>two views</title></head><body>{views['head'].data}"
                    f"{views['model'].data}</body></html>", encoding="utf-8")

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for name, view in list(views.items()) + [("two_views", None)]:
                path = both if view is None else view.save(tmp_path / f"{name}.html")
                page = browser.new_page()
                errors, remote = [], []
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

                def route(r, remote=remote):
                    if r.request.url.startswith("file://"):
                        r.continue_()
                    else:
                        remote.append(r.request.url)
                        r.abort()

                page.route("**/*", route)
                page.goto(path.as_uri())
                roots = [view.vis_id] if view else [views["head"].vis_id, views["model"].vis_id]
                for root in roots:
                    page.wait_for_selector(f"#{root} svg", state="attached", timeout=10_000)
                    drawn = page.locator(f"#{root} svg line, #{root} svg path, #{root} svg rect, "
                                         f"#{root} svg text").count()
                    assert drawn > 10, f"{name}: only {drawn} SVG elements in #{root}"
                if name in ("head", "head_encdec", "neuron", "model_encdec"):   # layer / kind menus
                    assert page.locator(f"#{roots[0]} select option").count() >= 2, name
                if name in ("head", "head_encdec"):       # each colour square numbered 0, 1, ...
                    numbers = page.locator(f"#{roots[0]} svg text.head-number").all_text_contents()
                    assert numbers == [str(k) for k in range(len(numbers))] and numbers, (name, numbers)
                if name in ("model", "model_encdec", "neuron"):   # scaled to the width available
                    page.wait_for_selector(f"#{roots[0]} svg[viewBox]", state="attached", timeout=10_000)
                    page.set_viewport_size({"width": 600, "height": 600})
                    right = page.locator(f"#{roots[0]} svg").evaluate("s => s.getBoundingClientRect().right")
                    assert right <= 600, f"{name}: the SVG ends at {right} px in a 600 px page"
                    # and the drawing ends well inside it (issue 29: the last head touched the edge)
                    margin = page.locator(f"#{roots[0]} svg").evaluate("""s => {
                        const box = s.getBoundingClientRect(); let r = 0;
                        for (const c of s.querySelectorAll("*")) {
                            const b = c.getBoundingClientRect(); if (b.width) r = Math.max(r, b.right); }
                        return (box.right - r) / box.width; }""")
                    assert margin >= 0.01, f"{name}: the drawing ends {margin:.1%} of the width from the SVG's edge"
                # the view in words: a sentence, and a table behind a disclosure opened by keyboard
                words = page.locator(".bertviz-text")
                assert words.count() == (2 if view is None else 1), name
                assert "Strongest link" in words.first.inner_text() or "strongest link" in words.first.inner_text()
                assert page.get_by_role("table").count() == 0        # closed: not read yet
                words.first.locator("summary").focus()
                page.keyboard.press("Enter")
                assert page.get_by_role("table").first.is_visible(), name
                violations = axe_support.audit(page)
                assert not violations, f"{name}: {axe_support.summary(violations)}"
                assert not errors, f"{name}: {errors}"
                assert not remote, f"{name} tried to fetch {remote}"
                page.close()
        finally:
            browser.close()
