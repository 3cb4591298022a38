"""Generated training prompts for the adapter corpus (written for this project).

The 48 hand-written prompts of :data:`spectheory.lm.corpus.TRAINING_PROMPTS`
are too few for an adapter to generalise: the target's continuations of them
hold about 2,000 positions.  This module builds several hundred more from
templates and word lists, in the six categories of the evaluation set
(:mod:`spectheory.lm.prompts`: chat, code, math, summarisation, translation,
reasoning) plus short explanations, so that the target's own sampled answers
can be the bulk of the training data.

The list is a pure function of this file: numbers in the arithmetic prompts
come from a fixed-seed generator, and the order interleaves the categories
round-robin so that any prefix of the list is balanced.
:func:`generated_prompts` drops every prompt that is also an evaluation
prompt (there is none; the check keeps it so).
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["generated_prompts"]

_CHAT_TASKS = (
    "stay focused while studying",
    "make new friends in a new city",
    "start running as a complete beginner",
    "sleep better at night",
    "plan a picnic in the park",
    "keep a small balcony garden alive",
    "cook rice without it sticking",
    "choose a good book for a long train ride",
    "prepare for a job interview over video",
    "learn to play the guitar",
    "organise a surprise party for my sister",
    "remember people's names",
    "reduce the time I spend on my phone",
    "write a thank-you note to a teacher",
    "pack a lunch box for a school trip",
    "clean a cast-iron pan",
    "welcome a new puppy at home",
    "spend a quiet evening without screens",
    "stay warm while camping in autumn",
    "make a budget for the month",
    "get better at public speaking",
    "decorate a small bedroom on a budget",
    "keep houseplants healthy in winter",
    "pick a name for a pet goldfish",
)
_CHAT_TEMPLATES = (
    "Can you give me some tips on how to {}?",
    "What is the best way to {}?",
    "I want to {}. Where should I start?",
)

_CODE_TASKS = (
    "returns the average of a list of numbers",
    "removes duplicates from a list while keeping the order",
    "counts how many times each word appears in a sentence",
    "checks whether a string is a palindrome",
    "returns the n-th Fibonacci number",
    "merges two sorted lists into one sorted list",
    "converts a temperature from Celsius to Fahrenheit",
    "returns the second largest number in a list",
    "capitalises the first letter of every word",
    "flattens a list of lists",
    "checks whether two strings are anagrams",
    "returns the greatest common divisor of two integers",
    "counts the lines of a text file",
    "returns all even numbers from a list",
    "swaps the keys and values of a dictionary",
    "finds the longest word in a sentence",
    "returns the product of the digits of an integer",
    "sorts a list of names alphabetically",
)
_CODE_LANGUAGES = ("Python", "JavaScript", "Python")
_CODE_QUESTIONS = (
    "What is a list comprehension in Python? Show a small example.",
    "What is the difference between a list and a tuple in Python?",
    "How do I install a package with pip?",
    "What does the git command 'git commit' do?",
    "What does the git command 'git pull' do?",
    "Explain what a variable is in programming.",
    "What is a function in programming, with a short example?",
    "How do I open a JSON file in Python?",
    "What is the difference between let and const in JavaScript?",
    "Write a SQL query that returns the ten most recent orders.",
    "Write a SQL query that finds the average price of all products.",
    "What does the CSS property 'margin' do?",
    "What does 'return' do in a Python function?",
    "How do I write a while loop in Python?",
    "What is an API, in simple words?",
    "How do I print 'Hello, world!' in C?",
)

_MATH_PROMPTS_PER_KIND = 14

_SUMMARY_TEXTS = (
    "The river festival returns this summer with boat races, food stalls and music "
    "on the water front every evening for a week.",
    "Scientists found that crows can remember human faces for years and warn other "
    "crows about people who treated them badly.",
    "The new bus line connects the university to the city centre every ten minutes "
    "and runs until midnight on weekdays.",
    "Eating breakfast gives the body energy after the night, helps concentration in "
    "the morning and can prevent overeating later in the day.",
    "The old cinema on Main Street reopened after two years of repairs, with new "
    "seats, a larger screen and a small cafe in the lobby.",
    "Sea turtles lay their eggs on sandy beaches at night, and the young turtles head "
    "for the sea as soon as they hatch.",
    "The museum will offer free entry on the first Sunday of every month to make art "
    "easier to enjoy for families.",
    "Wind farms turn the energy of moving air into electricity and now supply a large "
    "share of the country's power on windy days.",
    "The village market moved to the main square, where farmers sell vegetables, "
    "cheese and honey every Saturday morning.",
    "Reading to children every day builds their vocabulary, improves their attention "
    "and gives families a calm moment together.",
    "A storm closed the mountain road for two days, and crews worked through the "
    "night to clear fallen trees and rocks.",
    "Penguins cannot fly, but their strong flippers make them fast and skilful "
    "swimmers in cold ocean water.",
)
_SUMMARY_TEMPLATES = (
    "Summarise in one sentence: {}",
    "Give a short summary: {}",
    "Summarise briefly: {}",
)

_SENTENCES = (
    "The children are playing in the garden.",
    "I would like to book a table for two.",
    "The library opens at nine in the morning.",
    "My favourite colour is green.",
    "Can you help me carry these bags?",
    "We are going to the beach tomorrow.",
    "The soup is too hot to eat.",
    "How much does this jacket cost?",
    "It is raining, so take an umbrella.",
    "She reads the newspaper every morning.",
    "The museum is closed on Mondays.",
    "I have two brothers and one sister.",
)
_LANGUAGES = ("French", "Spanish", "German", "Italian")

_REASONING = (
    "Lucy is faster than Omar, and Omar is faster than Kim. Who is the slowest?",
    "If it is raining, the grass is wet. The grass is wet. Must it be raining? Explain.",
    "A box has 5 red and 3 blue balls. How many balls must I take out to be sure of "
    "getting two of the same colour?",
    "All cats are animals and some animals are black. Are some cats black for sure?",
    "What comes next in the sequence 2, 4, 8, 16?",
    "What comes next in the sequence 1, 4, 9, 16?",
    "If today is Tuesday, what day will it be in ten days?",
    "A bat and a ball cost 1.10 in total, and the bat costs 1.00 more than the ball. "
    "How much is the ball?",
    "I have three apples and eat one, then buy four more. How many apples do I have?",
    "Which weighs more, a litre of water or a litre of oil? Explain.",
    "If five machines make five widgets in five minutes, how long do 100 machines take "
    "to make 100 widgets?",
    "Anna has twice as many books as Ben, who has 6. How many books do they have together?",
    "Is the statement 'all birds can fly' true? Give a reason.",
    "Mark is older than Sue but younger than Paul. Who is the oldest?",
)

_EXPLAIN = (
    "how rainbows form",
    "why the moon has phases",
    "how vaccines work",
    "what gravity is",
    "how a bicycle stays upright",
    "why we have seasons",
    "what the internet is",
    "how bees make honey",
    "why the sea is salty",
    "how a battery stores energy",
    "what a black hole is",
    "how plants drink water",
    "why ice floats on water",
    "how thunder is made",
    "what DNA does",
    "how airplanes fly",
)
_EXPLAIN_TEMPLATES = (
    "Explain {} in simple terms.",
    "Can you explain to a child {}?",
)

_CREATIVE = (
    "a lighthouse in a storm",
    "a quiet morning in the forest",
    "a cat watching the rain",
    "the first snow of winter",
    "a busy train station",
    "a summer night in the city",
    "an old tree in a park",
    "the smell of fresh bread",
)
_CREATIVE_TEMPLATES = (
    "Write a short poem about {}.",
    "Describe {} in two sentences.",
)


def _math_prompts():
    rng = np.random.default_rng(20261122)
    out = []
    for _ in range(_MATH_PROMPTS_PER_KIND):
        a, b = (int(v) for v in rng.integers(11, 99, size=2))
        x, m, c = (int(v) for v in rng.integers(2, 12, size=3))
        r = int(rng.integers(2, 15))
        out += [
            f"What is {a} multiplied by {b}?",
            f"What is {a} plus {b}?",
            f"Solve for x: {m}x + {c} = {m * x + c}.",
            f"What is the area of a rectangle that is {x} metres by {r} metres?",
            f"If a car travels {a * 2} km in {m} hours, what is its average speed?",
            f"What is {r * 5} percent of {b * 4}?",
        ]
    return out


def _by_category():
    chat = [t.format(task) for task, t in zip(_CHAT_TASKS, itertools.cycle(_CHAT_TEMPLATES))]
    chat += [t.format(task) for task, t in zip(_CHAT_TASKS[::2], _CHAT_TEMPLATES[1:] * 12)]
    code = [
        f"Write a {lang} function that {task}."
        for task, lang in zip(_CODE_TASKS, itertools.cycle(_CODE_LANGUAGES))
    ]
    code += list(_CODE_QUESTIONS)
    summary = [t.format(s) for s in _SUMMARY_TEXTS for t in _SUMMARY_TEMPLATES[:2]]
    translation = [f"Translate into {lang}: {s}" for s in _SENTENCES for lang in _LANGUAGES[:3]]
    translation += [f"How do you say '{s.rstrip('.?').lower()}' in Italian?" for s in _SENTENCES]
    explain = [t.format(e) for e in _EXPLAIN for t in _EXPLAIN_TEMPLATES]
    explain += [t.format(c) for c in _CREATIVE for t in _CREATIVE_TEMPLATES]
    return [chat, code, _math_prompts(), summary, translation, list(_REASONING), explain]


def generated_prompts() -> tuple[str, ...]:
    """The generated training prompts, categories interleaved, no evaluation prompt among them.

    >>> p = generated_prompts()
    >>> len(p) == len(set(p)) and len(p) > 250
    True
    """
    from .prompts import PROMPTS

    held = {p for _, p in PROMPTS}
    out, seen = [], set()
    for group in itertools.zip_longest(*_by_category()):
        for p in group:
            if p is not None and p not in held and p not in seen:
                seen.add(p)
                out.append(p)
    return tuple(out)
