"""The review as one self-contained HTML page (page.py)."""

from jobs.review.html.page import render_html

__all__ = ["render_html"]
