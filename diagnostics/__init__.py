"""Diagnostics over score tables: bias ratios, partial-input baselines, cluster metrics, plots."""
