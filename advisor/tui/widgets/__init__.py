"""Widgets of the advisor app, one concern per module."""
