"""The answer key: a final answer found, read by the question's kind, and graded correct/incorrect/unclear."""
