"""Adversarial probe construction: model-in-the-loop member/distractor selection and AFLite filtering."""
