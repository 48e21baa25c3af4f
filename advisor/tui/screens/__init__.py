"""Screens of the advisor app."""
