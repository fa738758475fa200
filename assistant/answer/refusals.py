"""Refusals: sentences that say the sources do not answer, in any common wording.

A refusal is never a claim. It states an absence ("The abstracts do not mention the GPU
count"), which no source sentence can support, yet it shares words with the sources and
could pass a support check. So refusals are taken out of an answer before its claims are
verified: an answer that is only a refusal is the model declining, and an answer that
answers part of the question keeps that part and drops the refusal.

A sentence is a refusal when it
- says that the sources (abstracts, context, excerpts, papers, documents, the text) do not
  say, contain, provide, mention … something, or that none of them does;
- says that something is not mentioned, stated, reported, given … (in the sources or not);
- says the answer cannot be found, answered or determined, or that there is no (or not
  enough) information;
- or is the prompt's own marker, ``NOT IN SOURCES``.
A sentence that negates a finding ("The method does not need labels") is not a refusal:
the verb must be one of saying or containing, or its subject what an answer cites (the
sources, abstracts, context, excerpts).
"""

from __future__ import annotations

import re

_SOURCES = (
    r"(?:provided |given |available |retrieved |above |these |listed |cited |numbered )?"
    r"(?:sources?|abstracts?|context|excerpts?|passages?|documents?|texts?|papers?|articles?|studies|study"
    r"|literature|information|data|results|materials?|references?)"
)
# What an answer cites: with one of these as subject, any negated verb is a refusal
# ("The other sources do not compare against dense models").
_CITED = (
    r"(?:provided |given |available |retrieved |above |these |listed |cited |numbered |other |remaining )?"
    r"(?:sources?|abstracts?|context|excerpts?|passages?)"
)
_SAYING = (
    r"(?:say|state|mention|report|specify|provide|contain|include|give|discuss|describe|detail|disclose"
    r"|indicate|list|address|answer|cover|offer|present|explain|reveal|clarify|identify|name|quantify|show)"
)
_PARTICIPLE = (
    r"(?:said|stated|mentioned|reported|specified|provided|contained|included|given|discussed|described"
    r"|detailed|disclosed|indicated|listed|addressed|answered|covered|offered|presented|explained|revealed"
    r"|clarified|identified|named|quantified|shown|available|known|clear|found|documented)"
)
_NEGATION = r"(?:do|does|did|can|could|would|will)\s*(?:not|n't)|don't|doesn't|didn't|cannot|can't|never|fail to|fails to"
_PATTERNS = [
    r"\bNOT IN (?:THE )?SOURCES\b",
    # "The provided sources do not contain ...", "the abstracts don't specify ..."
    rf"\b{_SOURCES}\b[^.;:]{{0,60}}?(?:{_NEGATION})\s+(?:\w+\s+){{0,2}}?{_SAYING}\w*",
    rf"\b{_CITED}\b[^.;:]{{0,40}}?(?:{_NEGATION})\s+\w+",
    # "The abstracts provide no information ..."
    rf"\b{_SOURCES}\b[^.;:]{{0,40}}?\b{_SAYING}\w*\s+(?:no|nothing)\b",
    # "None of the sources mention ...", "No abstract reports ..."
    rf"\b(?:none|neither)\s+of\s+(?:the\s+)?{_SOURCES}\b|\bno\s+{_SOURCES}\s+(?:\w+\s+)?{_SAYING}",
    # "... is not mentioned", "was not reported in the abstracts", "are not specified"
    rf"\b(?:is|are|was|were|isn't|aren't|wasn't|weren't|been|be)\s+(?:not\s+)?(?:explicitly\s+|directly\s+|clearly\s+)?"
    rf"(?:not\s+|n't\s+)?{_PARTICIPLE}\b(?=[^.]*\b(?:in|by|from|within)\s+(?:the\s+|any\s+|these\s+)?{_SOURCES}\b)",
    rf"\b(?:is|are|was|were)\s+not\s+(?:explicitly\s+|directly\s+)?(?:mentioned|stated|reported|specified|given"
    rf"|provided|disclosed|detailed|described|discussed|listed|included|available|addressed|covered)\b",
    rf"\b(?:isn't|aren't|wasn't|weren't)\s+(?:explicitly\s+)?(?:mentioned|stated|reported|specified|given"
    rf"|provided|disclosed|detailed|described|discussed|listed|included|available|addressed|covered)\b",
    # "I cannot answer", "I could not find", "we are unable to determine", "I don't know"
    r"\b(?:I|we)\s+(?:(?:do|did|can|could)\s*(?:not|n't)|cannot|can't|am unable to|are unable to|was unable to"
    r"|were unable to|have no|had no)\s+(?:\w+\s+)?(?:answer|find|determine|tell|know|say|infer|identify|locate"
    r"|see|provide|confirm|access|information)",
    r"\b(?:cannot|can't|could not|couldn't)\s+be\s+(?:answered|determined|found|inferred|identified|confirmed"
    r"|established|derived|deduced)",
    r"\bunable to (?:answer|determine|find|tell|say|infer|identify|locate|confirm)",
    # "There is no information about ...", "not enough information", "insufficient detail"
    r"\bthere\s+(?:is|are|was|were)\s+no\s+(?:\w+\s+)?(?:information|mention|data|details?|indication|evidence"
    r"|specifics|figures?|numbers?|answer|reference|discussion)",
    r"\b(?:insufficient|not enough|no specific|no relevant|no such|no direct)\s+(?:\w+\s+)?"
    r"(?:information|details?|data|evidence|context|mention)",
    r"\b(?:unclear|not clear|silent)\s+(?:from|in|on)\b",
    r"\bare silent\b|\bis silent\b",
    r"\bno answer\b|\bnot answerable\b|\bunanswerable\b",
]
_REFUSAL = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE)


def is_refusal(sentence: str) -> bool:
    """Whether a sentence says that the sources do not answer (see the module docstring)."""
    return bool(_REFUSAL.search(sentence))
