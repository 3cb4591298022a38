"""The embedded prompt set of the default traces, written for this project.

Six categories, six to seven prompts each (38 in all), short enough that a
135M-parameter chat model answers them in a few dozen tokens.  Each prompt is
a single user turn; the model's own chat template is applied when a trace is
recorded (:func:`spectheory.lm.trace.record_trace`).
"""

from __future__ import annotations

__all__ = ["CATEGORIES", "PROMPTS"]

#: (category, prompt) pairs, in a fixed order: prompt ids are indices here.
PROMPTS: tuple[tuple[str, str], ...] = (
    ("chat", "Hi! Could you suggest a name for a small grey kitten?"),
    ("chat", "What is a good way to spend a rainy Sunday afternoon at home?"),
    ("chat", "I feel nervous before my first job interview tomorrow. Any advice?"),
    ("chat", "Tell me a short, friendly joke about vegetables."),
    ("chat", "What should I pack for a weekend hiking trip in the mountains?"),
    ("chat", "Can you recommend three easy houseplants for a beginner?"),
    ("code", "Write a Python function that returns the sum of the squares of a list."),
    ("code", "How do I reverse a string in JavaScript?"),
    ("code", "Write a SQL query that counts the rows of a table named orders."),
    ("code", "Explain what a for loop does in Python, with a tiny example."),
    ("code", "Write a Python function that checks whether a number is prime."),
    ("code", "What does the git command 'git status' show?"),
    ("math", "What is 17 multiplied by 23?"),
    ("math", "Solve for x: 3x + 7 = 22."),
    ("math", "What is the area of a circle with radius 4 centimetres?"),
    ("math", "If a train travels 120 km in 2 hours, what is its average speed?"),
    ("math", "What is the sum of the angles of a triangle, and why?"),
    ("math", "Convert 0.75 to a fraction in lowest terms."),
    (
        "summarisation",
        "Summarise in one sentence: The town library will close for two weeks in "
        "March while workers replace the roof and install new lighting. Books can "
        "still be returned through the drop box by the front door.",
    ),
    (
        "summarisation",
        "Summarise briefly: Bees visit flowers to collect nectar and pollen. While "
        "doing so they carry pollen between plants, which helps many crops and wild "
        "plants produce seeds and fruit.",
    ),
    (
        "summarisation",
        "Give a one-line summary: The school football team won its final match 3-1 "
        "after trailing at half time, securing the regional title for the first time "
        "in ten years.",
    ),
    (
        "summarisation",
        "Summarise: Regular exercise improves heart health, strengthens muscles and "
        "bones, lifts mood, and helps people sleep better.",
    ),
    (
        "summarisation",
        "Summarise in a few words: The bakery on Elm Street now opens at six in the "
        "morning and sells fresh bread, croissants and coffee.",
    ),
    (
        "summarisation",
        "Summarise: Volcanoes form where molten rock from deep inside the Earth rises "
        "to the surface, often at the edges of tectonic plates.",
    ),
    ("translation", "Translate into French: Good morning, how are you today?"),
    ("translation", "Translate into Spanish: The cat is sleeping on the warm windowsill."),
    ("translation", "Translate into German: Where is the train station?"),
    ("translation", "How do you say 'thank you very much' in Italian?"),
    ("translation", "Translate into English: Je voudrais un café, s'il vous plaît."),
    ("translation", "Translate into French: I like reading books in the evening."),
    (
        "reasoning",
        "If all roses are flowers and some flowers fade quickly, can we conclude that "
        "some roses fade quickly? Explain.",
    ),
    ("reasoning", "Tom is taller than Anna, and Anna is taller than Ben. Who is the shortest?"),
    (
        "reasoning",
        "A farmer has 10 sheep and all but 3 run away. How many sheep are left?",
    ),
    ("reasoning", "Which is heavier, a kilogram of feathers or a kilogram of iron?"),
    (
        "reasoning",
        "It is 3 o'clock now. What time will it be in 10 hours?",
    ),
    ("reasoning", "Why does ice float on water?"),
    ("chat", "What are some tips for learning a new language?"),
    ("code", "What is the difference between a list and a tuple in Python?"),
)

#: The category names in order of first appearance.
CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(c for c, _ in PROMPTS))
