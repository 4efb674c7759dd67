"""Shared fixtures for the whole suite."""

from __future__ import annotations
