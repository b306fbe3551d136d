"""The pieces of tools/export_html.py (the command and `export` live there).

- page.py: nbconvert's template made offline (MathJax local, with its assistive MathML),
  the page's CSS, the checks that nothing is fetched from the network, images embedded;
- cells.py: code cells for a reader — solutions in a disclosure (or open, or absent),
  tracebacks without rulers, code and output as named regions;
- math_words.py: a heading's formula in words, for a screen reader;
- widgets.py: saved widget views -> what they showed (the page has no kernel).
"""
