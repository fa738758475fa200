"""The parts of an abstract: its labelled sections, each sentence's part, and its study snapshot.

**Sections.** A structured abstract (PubMed, MEDLINE, most clinical journals) labels its
parts: "BACKGROUND: … METHODS: … RESULTS: … CONCLUSIONS: …". The loaders keep the labels in
the text, as the databases export them, so a label is read back here: an upper-case run of
words and a colon opening the abstract (or title-case words naming a section: "Results:"), and
every later one opening a sentence. An abstract
that does not open with a label is unstructured, and no later colon is taken for one; its
closing sentences conclude when they read as conclusions (`concludes`: they infer or hedge, and
state no number), and the rest have no section.

Each label is put in one of NLM's categories (``BACKGROUND``, ``OBJECTIVE``, ``METHODS``,
``RESULTS``, ``CONCLUSIONS``): the one the record gives (PubMed XML's ``NlmCategory``, kept
by the loader in ``Abstract.extra["nlm_categories"]``), else the one its words name
(`category_of`: "INTERPRETATION" and "MAIN CONCLUSION" conclude, "PRINCIPAL FINDINGS" are
results, "MAIN OUTCOME MEASURES" are methods).

**Study snapshot.** `study` reads a record's year, journal and publication type, and the
sample size where the abstract states one in a form that cannot be mistaken for another
number: "(N = 1,099)", "a total of 312 patients", "1,099 women were randomized" (a lower-case
"n = 42" most often counts one group of the sample).
Those forms were kept for their measured precision (benchmarks/findings.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from assistant.corpus.display import sentences
from assistant.types import Abstract, Study

CATEGORIES = ("BACKGROUND", "OBJECTIVE", "METHODS", "RESULTS", "CONCLUSIONS")
# What a label's words say about its part, most telling first: "METHODS AND RESULTS" holds
# results, "RESULTS AND CONCLUSIONS" concludes.
_CATEGORY_WORDS = (
    ("CONCLUSIONS", r"CONCLU\w*|INTERPRETATION\w*|IMPLICATIONS?|SIGNIFICANCE|RELEVANCE|DISCUSSION|SUMMARY|PERSPECTIVES?|"
                    r"RECOMMENDATIONS?|LESSONS?"),
    ("RESULTS", r"RESULTS?|FINDINGS?|OBSERVATIONS?|OUTCOMES?(?! MEASURE)"),
    ("METHODS", r"METHODS?|METHODOLOGY|DESIGN|SETTINGS?|PARTICIPANTS?|PATIENTS?|SUBJECTS?|POPULATION|SAMPLE|"
                r"INTERVENTIONS?|MEASURES?|MEASUREMENTS?|MATERIALS?|PROCEDURES?|DATA|SOURCES?|SELECTION|EXTRACTION|"
                r"SYNTHESIS|ANALYSIS|CASES?|EXPOSURES?"),
    ("OBJECTIVE", r"OBJECTIVES?|AIMS?|PURPOSES?|GOALS?|HYPOTHES[IE]S|QUESTIONS?"),
    ("BACKGROUND", r"BACKGROUND|INTRODUCTION|CONTEXT|RATIONALE|IMPORTANCE"),
)
# Inference and hedging: how authors conclude in any field ("These findings suggest …",
# "X may be …", "… should be considered"). A result states what was measured, with numbers.
_CONCLUDING = re.compile(
    r"\b(?:suggest(?:s|ed|ing)?|indicat(?:e|es|ed|ing)|conclu(?:de|des|ded|sion|sions)|impl(?:y|ies|ied|ications?)|"
    r"may|might|could|should|appears?|seems?|likely|recommend(?:s|ed)?|needed|warrants?|warranted|promising|"
    r"potentially|underscores?)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
_LINK = re.compile(r"https?://|www\.|\bavailable (?:at|on|from)\b", re.IGNORECASE)
CLOSING_SENTENCES = 2
_INNER_LABEL = re.compile(r"(?<=[^A-Z\s])\s+([A-Z]{3,}(?:[ ,&/-]+[A-Z]{2,}){0,5})\s*:\s+")
_LABEL = re.compile(r"([A-Z][A-Z0-9]*(?:[ ,&/'-]+[A-Z0-9]+){0,7})\s*:\s+")
_TITLE_LABEL = re.compile(r"([A-Z][a-z]+(?: (?:[Aa]nd|[A-Z][a-z]+)){0,3})\s*:\s+")  # "Background: …" (RIS exports)

# Sample sizes, in forms that name a count of study units and nothing else.
_COUNT = r"(\d{1,3}(?:[,\u2009\u202f ]\d{3})+(?![\d.])|\d+)"  # "1,099", "224 140"
_UNITS = (
    r"(?:patients|participants|subjects|individuals|persons|people|women|men|adults|children|infants|neonates|"
    r"newborns|adolescents|students|volunteers|respondents|residents|pregnancies|mothers|families|"
    r"households|physicians|nurses|veterans|survivors|recipients|donors|users)"
)
_SAMPLE_FORMS = (
    re.compile(rf"\(\s*N\s*=\s*{_COUNT}\s*\)"),  # "(N = 1,099)": a whole sample ("n =" counts a group)
    re.compile(rf"\b[Aa] total of {_COUNT} {_UNITS}\b"),
    re.compile(rf"\b{_COUNT} (?:consecutive |eligible |adult |pediatric |paediatric |healthy )?{_UNITS} "
               r"(?:were|was) (?:enrolled|randomi[sz]ed|recruited|included|studied|analy[sz]ed|surveyed|interviewed|"
               r"followed|assigned)\b"),
)
_PART_BEFORE = re.compile(r"(?:\band|\d\s*,|\bother)\s*$")
_PART_AFTER = re.compile(
    r"\s*(?:\(\s*\d+(?:\.\d+)?\s*%|(?:[\w-]+\s+){0,6}and \d|[^.;]{0,80}\bgroup [A-Z0-9]\b|(?:were|was) (?:with|without|not)\b)"
)
# Publication types that say nothing of the study: every PubMed record is a journal article.
_UNTELLING_TYPES = re.compile(r"^(?:journal(?: article)?|research support\b.*|english abstract|comment)$", re.IGNORECASE)


@dataclass(frozen=True)
class Part:
    """One sentence of an abstract: as the text has it (``sentence``) and with a section label
    it opens with taken off (``text``), the label of the section it is in and that section's
    category (None for an unstructured abstract), and its index among the abstract's sentences."""

    sentence: str
    text: str
    label: str | None
    category: str | None
    index: int


def category_of(label: str) -> str | None:
    """The NLM category a section label's words name (None when they name none)."""
    upper = label.upper()
    for category, words in _CATEGORY_WORDS:
        if re.search(rf"\b(?:{words})\b", upper):
            return category
    return None


def _categories(abstract: Abstract) -> dict[str, str]:
    """The categories the record itself gives its labels (PubMed XML's NlmCategory)."""
    given = abstract.extra.get("nlm_categories")
    try:
        parsed = json.loads(given) if isinstance(given, str) else {}
    except json.JSONDecodeError:
        return {}
    return {str(k).upper(): str(v).upper() for k, v in parsed.items() if str(v).upper() in CATEGORIES}


def states_number(sentence: str) -> bool:
    """Whether a sentence states a number: results do, with what was measured."""
    return bool(_DIGIT.search(sentence))


def concludes(sentence: str) -> bool:
    """Whether an unlabelled sentence reads as a conclusion: it infers or hedges (`_CONCLUDING`)
    and states no number (a result states what was measured)."""
    return bool(_CONCLUDING.search(sentence)) and not states_number(sentence)


def _unstructured(found: list[str]) -> list[Part]:
    """An unstructured abstract's sentences: its closing ones (at most ``CLOSING_SENTENCES``,
    after any that only point at code or data) conclude when they read as conclusions
    (`concludes`); the others have no section."""
    end = len(found)
    while end and _LINK.search(found[end - 1]):
        end -= 1
    start = end
    while start > max(end - CLOSING_SENTENCES, 1) and concludes(found[start - 1]):
        start -= 1
    return [Part(s, s, None, "CONCLUSIONS" if start <= i < end else None, i) for i, s in enumerate(found)]


def parts(abstract: Abstract) -> list[Part]:
    """The abstract's sentences, as `display.sentences` splits its text (in a structured one,
    also before a label inside one), each with its section (see the module docstring)."""
    found = sentences(abstract.text)
    given = _categories(abstract)
    if not found or not _label(found[0], given):
        return _unstructured(found)
    result: list[Part] = []
    label, category = None, None
    for sentence in (piece for s in found for piece in _at_labels(s, given)):
        match = _label(sentence, given)
        if match:
            label = match.group(1)
            category = given.get(label.upper()) or category_of(label)
        result.append(Part(sentence, sentence[match.end():] if match else sentence, label, category, len(result)))
    return result


def _label(sentence: str, given: dict[str, str]) -> re.Match[str] | None:
    """The section label a sentence opens with: upper-case words and a colon, or title-case
    words that name a section ("Results:"; other title-case words before a colon are prose)."""
    match = _LABEL.match(sentence)
    if match:
        return match
    match = _TITLE_LABEL.match(sentence)
    return match if match and (match.group(1).upper() in given or category_of(match.group(1))) else None


def _at_labels(sentence: str, given: dict[str, str]) -> list[str]:
    """A sentence of a structured abstract cut before each label inside it: a section that
    ends without a full stop ("… (P<0.05) CONCLUSIONS: …") runs into the next one."""
    cuts = [m.start(1) for m in _INNER_LABEL.finditer(sentence)
            if m.group(1).upper() in given or category_of(m.group(1))]
    return [sentence[a:b].strip() for a, b in zip([0, *cuts], [*cuts, len(sentence)], strict=True) if sentence[a:b].strip()]


def sample_size(text: str) -> int | None:
    """The study's sample size, where the abstract states it in a form that names a count of
    study units (`_SAMPLE_FORMS`), else None. A count that is one part of a sum ("36 women and
    2 men", "44 patients … and 44 healthy women", "the other 75 patients"), one group ("… in
    group A", "(N=14) versus … (N=14)", "593 men were without risk factors") or a share of
    something ("78 men (81.3%)") is not the sample's; two different counts leave the sample
    size unknown."""
    counts = {
        int(re.sub(r"\D", "", m.group(1)))
        for form in _SAMPLE_FORMS
        if len(found := list(form.finditer(text))) == 1 or form is not _SAMPLE_FORMS[0]  # "(N = 14) versus (N = 14)"
        for m in found
        if not _PART_BEFORE.search(text, max(0, m.start() - 12), m.start())
        and not _PART_AFTER.match(text, m.end())
    }
    counts.discard(0)
    counts.discard(1)
    return counts.pop() if len(counts) == 1 else None


def publication_type(value: str | None) -> str | None:
    """The publication types that describe the study (a trial, a review, a case report),
    without those every record has ("Journal Article", "Research Support, …"); the record's
    own when it has no other."""
    if not value:
        return None
    kinds = [k.strip() for k in value.split(";") if k.strip()]
    telling = [k for k in kinds if not _UNTELLING_TYPES.match(k)]
    return "; ".join(telling or kinds) or None


def study(abstract: Abstract) -> Study:
    """The study snapshot of a record (see the module docstring)."""
    journal = abstract.extra.get("journal")
    kind = abstract.extra.get("publication_type")
    return Study(
        year=abstract.year,
        journal=journal if isinstance(journal, str) and journal else None,
        publication_type=publication_type(kind if isinstance(kind, str) else None),
        sample_size=sample_size(abstract.text),
    )
