"""Judging pages: ``judge`` for logged-in assessors and crowd users (session and CSRF cookie), ``hits`` for
external HIT pages shown inside MTurk's frame or opened from Prolific (signed, expiring token)."""
