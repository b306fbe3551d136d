"""The learner's setup and the course's plumbing: the environment check (00), the local record
of exercise verdicts and its table, the student versions of the notebooks.
"""
