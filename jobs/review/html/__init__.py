"""The review as one self-contained HTML page: page.py lays it out."""
