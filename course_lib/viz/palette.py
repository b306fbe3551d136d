"""The course's colours: Okabe & Ito's palette, told apart with any colour vision.

Figures use these names, not matplotlib's tab: colours, whose red/green and
orange/green pairs merge for deuteranopes and protanopes (tests/figure_access.py
measures it). Colour never carries meaning alone: series also differ by line style,
marker or hatch, and each figure's description says what it shows.
"""
__all__: list = []     # imported from here by name: not re-exported as a figure by course_lib.viz

BLUE = "#0072B2"
ORANGE = "#E69F00"
VERMILLION = "#D55E00"   # for what is wrong, masked, too much; learners read it as orange: prose says
                         # "orange-red", never "red" (tests/test_colour_words.py checks it)
GREEN = "#009E73"        # bluish green: never paired with VERMILLION alone
SKY = "#56B4E9"
PURPLE = "#CC79A7"       # reddish purple
YELLOW = "#F0E442"       # on white only as a fill, never for lines or text
GREY = "#6E6E6E"         # 5.1:1 on white: usable for text
BLACK = "#000000"

# For series in order: the pairs among the first five stay at least 10.9 ΔE (CAM02-UCS)
# apart for deuteranopes, protanopes and tritanopes.
CYCLE = (BLUE, VERMILLION, ORANGE, GREEN, PURPLE, SKY, BLACK)
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (1, 1)), (0, (3, 1, 1, 1, 1, 1)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X")

# Colour maps: perceptually uniform sequential (viridis, cividis, magma) or single-hue;
# for signed values a diverging map whose ends are blue and red (not red and green).
SEQUENTIAL = "viridis"
DIVERGING = "RdBu_r"
ALLOWED_CMAPS = {"viridis", "viridis_r", "cividis", "cividis_r", "magma", "magma_r", "inferno",
                 "plasma", "Blues", "Greys", "Purples", "Oranges", "RdBu", "RdBu_r", "PuOr", "PuOr_r"}
