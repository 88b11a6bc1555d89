"""Figures copied from the papers probegen reimplements, for side-by-side comparison."""
