"""@file references: finding them in a user turn, reading files safely, summarizing them."""
