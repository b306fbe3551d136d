"""One lesson's measurements on small models: the long-range recall task (01), positional
extrapolation (03), the bindings toy task (04, 05), deep stacks (05), the lesson 08
translator's recipe and evaluation, transformer families and head patterns (09),
induction heads (10). They build on course_lib.nn and course_lib.data; the core never
imports them.
"""
