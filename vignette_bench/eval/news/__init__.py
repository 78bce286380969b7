"""The news subset (papers/003): open-ended answers in JSON, judged for bias, faithfulness and accuracy."""
