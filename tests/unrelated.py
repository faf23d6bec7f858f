"""Requests no chat history is about, and follow-ups of the chat just held: what memory
and recall must add nothing to (tests/engine/test_memory_precision.py, and the precision
bench, bench/memory_precision.py)."""

#: Everyday requests as a user would type them in a new chat.
UNRELATED = [
    "Write a short poem about the first frost of the year.",
    "How many grams are in three quarters of a pound?",
    "What is the capital city of Canada?",
    "Define entropy in two sentences.",
    "Convert 30 degrees Celsius to Fahrenheit.",
    "Give me a limerick about a forgetful robot.",
    "How do you say 'thank you very much' in Japanese?",
    "What's 15% of 240?",
    "Explain what a prime number is to a ten-year-old.",
    "Suggest three names for a small bakery.",
    "Who painted The Starry Night?",
    "What is the boiling point of water at sea level in Kelvin?",
    "Summarize the rules of tic-tac-toe.",
    "Write a haiku about a quiet train station.",
    "What's the difference between affect and effect?",
    "How many minutes are in a week?",
    "List four primary tastes besides sweet.",
    "Translate 'where is the library' into French.",
    "What does the acronym NASA stand for?",
    "Give me a tongue twister.",
]
#: Follow-ups of the chat just held: they need the last turn, not the past.
FOLLOW_UPS = ["Thanks!", "Can you make that shorter?", "Say it again more simply, please.", "OK, and then?"]
