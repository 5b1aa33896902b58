"""One answer, start to end, for every caller (page, accuracy runs, replay, compare).

`request.py` builds what is sent (seed guard included), `stream.py` streams it to an observer and
returns a typed `AnswerOutcome` (`outcome.py`: the end's note, the grade, the record), `stamp.py`
says what produced it, and `grading/` holds the answer key.
"""
