#!/usr/bin/env python3
"""Synthetic article-like sentences: a subject, a relative clause that agrees with it, then the main verb.

  "The mayor, who was born in Lyon, opened the bridge early."
  "The queens, who were trained in Rome, visited their palace again."

The grammar is small and seeded. What it is for: the word after the main verb depends on the subject
("their" after a plural subject, "his"/"her" after a gendered one, "the" otherwise), and the object depends
on the subject's trade (a chef cooks a meal, a pilot flies a plane). A past-tense verb carries neither, so a
model that predicts the next word well at the verb has a reason to look back past the relative clause to
the subject: the link the article shows ("cooked" -> "chef").

Two disjoint uses:
  training documents (train_documents): cities from TRAIN_CITIES only;
  held-out probe sentences (probe_sentences): cities from PROBE_CITIES only, so no probe sentence can
  occur in the training share; the article's own sentence is excluded from training as well.
"""

import random

# trade -> its subjects, each "singular/plural" or "singular/plural/gender" (m or f)
SUBJECT_WORDS = {
    "kitchen": "chef/chefs cook/cooks baker/bakers waiter/waiters/m waitress/waitresses/f",
    "town": "mayor/mayors governor/governors king/kings/m queen/queens/f senator/senators",
    "air": "pilot/pilots captain/captains",
    "farm": "farmer/farmers gardener/gardeners",
    "school": "teacher/teachers student/students",
    "clinic": "doctor/doctors nurse/nurses",
    "art": "painter/painters singer/singers actress/actresses/f actor/actors/m writer/writers poet/poets",
    "road": "driver/drivers mechanic/mechanics",
    "home": "man/men/m woman/women/f boy/boys/m girl/girls/f father/fathers/m mother/mothers/f uncle/uncles/m "
    "aunt/aunts/f neighbour/neighbours",
    "court": "lawyer/lawyers judge/judges",
    "army": "soldier/soldiers general/generals",
    "lab": "scientist/scientists engineer/engineers",
}
# (singular, plural, gender or None, trade), in SUBJECT_WORDS' order
SUBJECTS = [(*(w.split("/") + [None])[:3], trade) for trade, words in SUBJECT_WORDS.items() for w in words.split()]

# trade -> (past-tense verbs, objects)
ACTIONS = {
    "kitchen": (
        ["cooked", "served", "prepared", "tasted", "made"],
        ["meal", "soup", "dinner", "bread", "cake", "fish"],
    ),
    "town": (
        ["opened", "visited", "closed", "praised", "inspected"],
        ["bridge", "school", "park", "station", "palace", "museum"],
    ),
    "air": (["flew", "landed", "checked", "repaired", "boarded"], ["plane", "jet", "helicopter", "glider"]),
    "farm": (["planted", "watered", "harvested", "sold", "picked"], ["corn", "wheat", "apples", "roses", "beans"]),
    "school": (["read", "wrote", "finished", "studied", "marked"], ["book", "lesson", "essay", "report", "test"]),
    "clinic": (["treated", "examined", "helped", "visited", "cured"], ["patient", "child", "wound", "fever"]),
    "art": (["painted", "sang", "wrote", "performed", "sold"], ["song", "portrait", "poem", "play", "picture"]),
    "road": (["drove", "fixed", "parked", "washed", "stopped"], ["car", "truck", "bus", "engine", "van"]),
    "home": (["cleaned", "painted", "locked", "sold", "left"], ["house", "door", "kitchen", "garden", "room"]),
    "court": (["won", "lost", "argued", "heard", "closed"], ["case", "trial", "appeal", "hearing"]),
    "army": (["led", "trained", "moved", "defended", "crossed"], ["troops", "camp", "river", "border", "fort"]),
    "lab": (["built", "tested", "designed", "measured", "improved"], ["machine", "engine", "device", "model"]),
}

TRAIN_CITIES = (
    "Paris London Rome Berlin Madrid Vienna Boston Chicago Dublin Athens Cairo Tokyo Moscow Naples Venice Geneva "
    "Prague Warsaw Texas Ohio Denver Seattle Atlanta Toronto Sydney Oxford Milan"
).split()
# never used in training sentences: the probe sentences are built with these
PROBE_CITIES = "Lyon Lisbon Brussels Munich Florence Oslo Stockholm Havana Montreal Bombay Dallas Edinburgh".split()

ADVERBS = "quickly early slowly carefully again yesterday late twice well today once alone gladly badly".split()

# relative clauses: (singular form, plural form); {c} is a city
REL_CLAUSES = [
    ("who was born in {c}", "who were born in {c}"),
    ("who trained in {c}", "who trained in {c}"),
    ("who lived in {c}", "who lived in {c}"),
    ("who grew up in {c}", "who grew up in {c}"),
    ("who has worked in {c}", "who have worked in {c}"),
    ("who was trained in {c}", "who were trained in {c}"),
    ("who studied in {c}", "who studied in {c}"),
    ("who is from {c}", "who are from {c}"),
    ("who had moved to {c}", "who had moved to {c}"),
    ("who was living in {c}", "who were living in {c}"),
    ("who came back from {c}", "who came back from {c}"),
    ("who was visiting {c}", "who were visiting {c}"),
]

ARTICLE_SENTENCE = "The chef, who trained in Paris, cooked the meal quickly."


def determiner(gender, plural):
    if plural:
        return "their"
    return {"m": "his", "f": "her"}.get(gender, "the")


def sentence(rng, cities, plural=None, clause=None):
    """One sentence and its parts: {"text", "subject", "verb", "plural"}."""
    sing, plur, gender, trade = rng.choice(SUBJECTS)
    plural = rng.random() < 0.3 if plural is None else plural
    subj = plur if plural else sing
    rel = (clause or rng.choice(REL_CLAUSES))[1 if plural else 0].format(c=rng.choice(cities))
    verbs, objs = ACTIONS[trade]
    verb = rng.choice(verbs)
    obj = rng.choice(objs)
    text = f"The {subj}, {rel}, {verb} {determiner(gender, plural)} {obj} {rng.choice(ADVERBS)}."
    return {"text": text, "subject": subj, "verb": verb, "plural": plural}


def train_documents(n_sentences, seed, per_doc=12):
    """Documents of per_doc sentences (one paragraph each) for the training share."""
    rng = random.Random(seed)
    sents = []
    while len(sents) < n_sentences:
        s = sentence(rng, TRAIN_CITIES)["text"]
        if s != ARTICLE_SENTENCE:
            sents.append(s)
    return [" ".join(sents[i : i + per_doc]) for i in range(0, len(sents), per_doc)]


def probe_sentences(n, seed=2024):
    """n distinct held-out sentences built like the article's (singular subject, as in the article)."""
    rng = random.Random(seed)
    out, seen = [], set()
    while len(out) < n:
        s = sentence(rng, PROBE_CITIES, plural=False)
        if s["text"] not in seen:
            seen.add(s["text"])
            out.append(s)
    return out


if __name__ == "__main__":
    for d in train_documents(24, 1)[:2]:
        print(d)
    for s in probe_sentences(5):
        print(s)
