"""Tests of the budget and fan-out widgets and their text fallback."""
