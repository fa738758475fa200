"""Word-level helpers shared by retrieval (subject terms), context selection and citation checks.

Numbers are compared as quantities, not strings: "2.4B", "2.4 billion" and "2,400 million"
are one value, "21.5 %" and "21.5 percent" one number, "$10^{-3}$", "1e-3" and "0.001" one
value, and a source that writes "three" states 3. Names are the words a claim may only use
when its source has them: acronyms, CamelCase, words with digits and capitalised words inside
a sentence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from functools import cached_property, lru_cache

import Stemmer
from bm25s.stopwords import STOPWORDS_EN

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]*|\d+(?:\.\d+)?")
_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?![\d])")
_THOUSANDS = re.compile(r"(?<=\d)[,\u2009\u202f](?=\d{3}\b)")
_QUANTITY = re.compile(
    r"(?<![\d.])(\d+(?:\.\d+)?)(?:\s?(thousand|million|billion|trillion)\b|([kKMBT]|bn)(?![A-Za-z\d]))?"
)
_WORD_QUANTITY = re.compile(
    r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen"
    r"|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred)"
    r"(?:\s(thousand|million|billion|trillion)\b)?",
    re.IGNORECASE,
)
_NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100}
_EXPONENTS = {
    "thousand": 3, "k": 3, "million": 6, "m": 6, "billion": 9, "b": 9, "bn": 9, "trillion": 12, "t": 12,
}
# Powers of ten as authors write them: "$2.5 \\times 10^{4}$", "2.5×10^4", "$10^{-3}$", "1e-3", "3.2E+05".
_POWER_OF_TEN = re.compile(
    r"(?<![\d.])(?:(\d+(?:\.\d+)?)\s*(?:\\times|\\cdot|[×x*·])\s*)?10\s*\^\s*\{?\s*([-−+]?\d+)\s*\}?"
    r"|(?<![\w.])(\d+(?:\.\d+)?)[eE]([-−+]?\d+)(?![\w.])"
)
_VERSION = re.compile(r"[vV]?\d+(?:\.\d+)?[a-z]?")  # "ColBERTv2", "Llama2", "GPT4o"
_NAME_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9\-']*[A-Za-z0-9]|[A-Z]")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\(\s*)$")
_LOWER_SUFFIX = re.compile(r"(?<=[A-Za-z0-9])(?:-[a-z]+)+$")
_NAME_WORD = re.compile(r"(?<![\d])[A-Za-z][A-Za-z0-9\-]+")
_CLAUSE_START = re.compile(r"(?:^|[.!?:;]\s+)[\"'(\[]*$")
TITLE_CASE_SHARE = 0.6  # of a question's content words capitalised: title case
_STEMMER = Stemmer.Stemmer("english")
_OPENERS = {
    "we", "our", "its", "both", "each", "however", "overall", "moreover", "furthermore", "thus",
    "therefore", "here", "instead", "while", "when", "where", "although", "since", "because", "all",
    "some", "most", "other", "another", "one", "two", "three", "first", "second", "third", "finally",
    # prepositions and words of degree, which open terse answers ("Up to 50%", "Through a
    # contrastive task", "Only 13.5% of the data") and name nothing
    "through", "via", "without", "across", "after", "before", "during", "under", "over", "up", "about",
    "only", "just", "around", "among", "onto", "from", "per", "than", "within", "versus", "toward",
    "towards", "upon", "despite", "unlike", "like", "beyond", "along", "against", "besides", "except",
    "until", "rather", "almost", "more", "less", "fewer", "even",
}
_STOP = set(STOPWORDS_EN) | {
    "paper", "papers", "source", "sources", "abstract", "study", "work", "also", "use", "uses", "used",
    "what", "which", "who", "whom", "whose", "why", "how", "many", "much", "does", "did", "do", "yes",
}


def content_words(text: str, with_numbers: bool = True) -> set[str]:
    """Stemmed, lower-cased words that carry content (numbers too, unless ``with_numbers``
    is False: `quantities` compares those)."""
    words = [w.lower() for w in _WORD.findall(text)]
    kept = [w for w in words if w not in _STOP and (len(w) > 2 or w.isdigit()) and (with_numbers or not w[0].isdigit())]
    return set(_STEMMER.stemWords(kept))


# Words that frame a statement (who found it, in which paper) rather than state it:
# "The study found that X" states X.
FRAMING = content_words(
    "report reports reported show shows showed shown find finds found propose proposes proposed present presents "
    "presented introduce introduces introduced demonstrate demonstrates describe describes argue argues suggest "
    "suggests observe observes version versions other another one paper papers study studies work works author authors"
)


def share(asked: Collection[str], text: str) -> float:
    """The share of the question's content words (``asked``) that a text contains."""
    return len(asked & content_words(text)) / len(asked) if asked else 0.0


def numbers(text: str) -> set[str]:
    """The numbers in a text, thousands separators removed ("8,192" → "8192")."""
    return set(_NUMBER.findall(_THOUSANDS.sub("", text)))


Quantity = tuple[float, int]  # (mantissa, power of ten its scale word or suffix gives; 0 for none)


@lru_cache(maxsize=8192)
def quantities(text: str, words: bool = False) -> frozenset[Quantity]:
    """The numbers of a text as (mantissa, exponent): "13.2T" → (13.2, 12), "8,192" →
    (8192, 0). With ``words``, numbers written as words count too ("three", "one billion"):
    a source may spell out what a claim writes in digits. Kept for the texts read last: the
    claim check reads a claim against every source, and the same abstracts answer many
    questions."""
    text = _THOUSANDS.sub("", text)
    found = {_power_of_ten(m) for m in _POWER_OF_TEN.finditer(text)}
    text = _POWER_OF_TEN.sub(" ", text)  # their digits are not numbers of their own
    found |= {
        (float(m.group(1)), _EXPONENTS.get((m.group(2) or m.group(3) or "").lower(), 0))
        for m in _QUANTITY.finditer(text)
    }
    if words:
        found |= {
            (float(_NUMBER_WORDS[m.group(1).lower()]), _EXPONENTS.get((m.group(2) or "").lower(), 0))
            for m in _WORD_QUANTITY.finditer(text)
        }
    return frozenset(found)


def _power_of_ten(match: re.Match[str]) -> Quantity:
    mantissa = match.group(1) or match.group(3) or "1"
    exponent = (match.group(2) or match.group(4)).replace("−", "-")
    return float(mantissa), int(exponent)


def _same_quantity(a: Quantity, b: Quantity) -> bool:
    """Equal values ("2.4 billion" = "2,400 million"), or equal mantissas where one side
    names no scale ("2.4" in "2.4 billion parameters" against "2.4B")."""
    if math.isclose(a[0] * 10.0 ** a[1], b[0] * 10.0 ** b[1], rel_tol=1e-9):
        return True
    return (a[1] == 0 or b[1] == 0) and min(a[1], b[1]) >= 0 and math.isclose(a[0], b[0], rel_tol=1e-9)


def unstated_numbers(claim: str, source: str) -> list[str]:
    """The numbers of a claim (written in digits) that the source does not state."""
    return Statement(source).unstated_numbers(claim)


@lru_cache(maxsize=8192)
def names(text: str) -> frozenset[str]:
    """The claim words that name something, lower-cased: acronyms, CamelCase and words with
    digits ("NFNets", "GPT-4"), and other capitalised words, except sentence openers that
    name nothing: stop and discourse words, adverbs ("Specifically"), and verb forms
    ("Measured by recall ...", "Using ..."). A lower-case suffix is not part of the name
    ("DenseNet-based" → "densenet")."""
    found = set()
    for match in _NAME_TOKEN.finditer(text):
        word = _LOWER_SUFFIX.sub("", re.sub(r"'s?$", "", match.group(0)))
        if len(word) < 2 or not any(c.isupper() for c in word) and not any(c.isdigit() for c in word):
            continue
        inner = any(c.isupper() for c in word[1:]) or any(c.isdigit() for c in word)
        opens = bool(_SENTENCE_START.search(text[: match.start()]))
        verb_form = opens and word[1:].islower() and word.endswith(("ed", "ing"))
        if inner or not (_opener(word) or verb_form):
            found.add(word.lower())
    return frozenset(found)


def quantity_stated(quantity: Quantity, stated: Collection[Quantity]) -> bool:
    """Whether a text stating ``stated`` (see `quantities`) states this quantity."""
    return any(_same_quantity(quantity, s) for s in stated)


def unstated_names(claim: str, source: str) -> list[str]:
    """The names of a claim that the source does not contain, as written or, for an acronym,
    spelled out ("LLMs" is stated by "large language models")."""
    return Statement(source).unstated_names(claim)


class Statement:
    """What a source text states, read when first asked and then kept, so that many claims
    can be checked against it: its lower-cased text and its words' initials (for spelled-out
    acronyms); its numbers are read by `quantities`, which keeps them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lowered = text.lower()

    @cached_property
    def initials(self) -> str:
        return "".join(w[0] for w in re.findall(r"[a-z0-9]+", self.lowered))

    def unstated_numbers(self, claim: str) -> list[str]:
        """The numbers of a claim (written in digits) that this text does not state."""
        return [f"{m:g}" + ("e" + str(e) if e else "") for m, e in sorted(quantities(claim))
                if not quantity_stated((m, e), quantities(self.text, words=True))]

    def unstated_names(self, claim: str) -> list[str]:
        """The names of a claim that this text contains neither as written nor spelled out."""
        return [name for name in sorted(names(claim))
                if name not in self.lowered and not spelled_out(name, self.lowered, self.initials)]


def spelled_out(name: str, lowered: str, initials: str | None = None) -> str | None:
    """The words of a lower-cased text that spell out the acronym ``name`` ("llms": "large
    language models"): consecutive words starting with its letters; None if none do.
    ``initials``, the text's word initials, may be passed when many names are checked
    against one text."""
    acronym = name[:-1] if name.endswith("s") and len(name) > 2 else name
    if not (acronym.isalpha() and 2 <= len(acronym) <= 6):
        return None
    words = re.findall(r"[a-z0-9]+", lowered)
    if acronym not in (initials if initials is not None else "".join(w[0] for w in words)):
        return None
    n = len(acronym)
    return next((" ".join(words[i : i + n]) for i in range(len(words) - n + 1)
                 if "".join(w[0] for w in words[i : i + n]) == acronym), None)


def mentions(term: str, text: str) -> bool:
    """Whether a text names ``term`` in any common spelling of it: with or without hyphens
    and spaces ("Time-MoE", "TimeMoE", "Time MoE"), singular or plural ("NFNet", "NFNets"), or,
    for an acronym, spelled out ("LLM": "large language models"), or with a version ("ColBERTv2").
    Word boundaries hold: "Time-MoE" is not in "ultimate MoE", nor "BERT" in "RoBERTa". A term
    that is not lower-case is matched in its case (an acronym that is also a word: "LIMIT" is
    not "limit")."""
    exact = not term.islower()
    words = re.findall(r"[A-Za-z0-9]+", text if exact else text.lower())
    wanted = "".join(re.findall(r"[A-Za-z0-9]+", term))
    forms = {wanted, wanted + "s", wanted + "es"} | ({wanted[:-1]} if wanted.lower().endswith("s") and len(wanted) > 3 else set())
    span = max(1, len(re.findall(r"[A-Za-z0-9]+", term))) + 2
    for start in range(len(words)):
        joined = ""
        for word in words[start : start + span]:
            joined += word
            if joined in forms or any(joined.startswith(f) and _VERSION.fullmatch(joined[len(f):]) for f in forms):
                return True
    return bool(spelled_out(term.lower(), text.lower()))


def named_terms(text: str) -> set[str]:
    """Named terms, lower-cased: capitalised words that are not stop words (acronyms,
    CamelCase, names; a capitalised first word counts too, names often start answers).
    A lower-case suffix is not part of the name: "DenseNet-based" → "densenet". Words
    that open sentences without naming anything ("Yes", "We", "Specifically") are not names."""
    return {word.lower() for word in (_LOWER_SUFFIX.sub("", w) for w in _NAME_WORD.findall(text)) if _capitalised(word)}


def _capitalised(word: str) -> bool:
    """A word written with a capital that is not a sentence opener (`_opener`)."""
    return any(c.isupper() for c in word) and not _opener(word)


def question_names(question: str) -> set[str]:
    """The named terms of a question (`named_terms`), leaving out the words whose capital
    the writer had to write: the first word of a question (ending in "?") or of one of its
    clauses ("Storage of vaccines: weak link?", "Would …?"; a question that does not open
    with a question word is a title), and every word of a question in title case
    ("Is Acupuncture Efficacious for Treating Vocal Pathologies?"). There, only a name's own
    shape marks it: capitals or digits after its first letter ("DReSD", "Time-MoE", "GPT-4"),
    and only digits in a question written all in capitals."""
    found = [(m.start(), _LOWER_SUFFIX.sub("", m.group(0))) for m in _NAME_WORD.finditer(question)]
    content = [w for _, w in found if w.lower() not in _STOP and w.isalpha()]
    title_case = len(content) >= 3 and sum(w[0].isupper() for w in content) >= TITLE_CASE_SHARE * len(content)
    shouted = len(content) >= 3 and all(w.isupper() for w in content)  # all capitals: no word's shape says anything
    asks = question.rstrip().endswith("?")  # a statement often opens with its subject ("Aspirin inhibits …")
    names_ = set()
    for start, word in found:
        if not _capitalised(word):
            continue
        shaped = any(c.isdigit() for c in word[1:]) or not shouted and any(c.isupper() for c in word[1:])
        forced = title_case or asks and bool(_CLAUSE_START.search(question[:start]))
        if shaped or not forced:
            names_.add(word.lower())
    return names_


def _opener(word: str) -> bool:
    """A stop word, a discourse word, or a capitalised adverb ("Additionally")."""
    lowered = word.lower()
    return lowered in _STOP or lowered in _OPENERS or (word[1:].islower() and lowered.endswith("ly"))


def specifics(sentence: str) -> float:
    """0-1: how many numbers and named terms (not counting the first word) a sentence
    states, two or more being 1. Findings have them; background sentences rarely do."""
    rest = sentence.split(" ", 1)[1] if " " in sentence else ""
    return min(1.0, (len(numbers(sentence)) + len(named_terms(rest))) / 2)
