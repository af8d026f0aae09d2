"""The learned re-rank's models (`memory.recall_rerank`; docs/recall-quality.md, rounds
8, 10 and 12): weights, means and scales per standardised column, each trained on the five
LoCoMo development conversations (balanced logistic loss, every fused candidate, MiniLM
vectors) and printed as these constants by its round's bench.
"""

from __future__ import annotations

from typing import Final

from memory.recall_rerank import LinearModel

MODEL: Final = LinearModel(
    mean=(
        0.264845,
        -1.55235,
        3.51169,
        0.261314,
        0.570445,
        3.3829,
        0.235681,
        0.567574,
        3.38463,
        0.138019,
        0.574081,
        -0.586397,
        0.0347678,
        0.0351286,
        0.295469,
        1.63918,
    ),
    scale=(
        0.195684,
        0.654294,
        0.918793,
        0.236467,
        0.495013,
        0.817846,
        0.281403,
        0.495413,
        0.817877,
        0.34492,
        0.132889,
        0.263872,
        0.183191,
        0.184105,
        0.276871,
        0.673324,
    ),
    weight=(
        0.117903,
        0.18143,
        -0.18413,
        0.0932921,
        0.441384,
        -0.341966,
        0.964823,
        -0.588157,
        0.00293975,
        -0.211324,
        1.30613,
        -0.536842,
        0.127262,
        0.232433,
        0.494984,
        0.0357962,
    ),
)
"""Trained on the five LoCoMo development conversations (balanced logistic loss, L2 0.1,
every fused candidate; MiniLM vectors): `python -m bench.locomo_round8 FILE --weights`
prints it. Weights are per standardised feature, in `FEATURES`' order."""


SPEAKER_MODEL: Final = LinearModel(
    mean=(*MODEL.mean, 0.566853),
    scale=(*MODEL.scale, 0.495511),
    weight=(
        0.0688558,
        0.129947,
        -0.0913891,
        -0.0744259,
        0.402152,
        -0.394142,
        0.853924,
        -0.480848,
        -0.17727,
        -0.113498,
        0.586175,
        0.209588,
        0.121398,
        0.377648,
        0.55122,
        -0.0439911,
        0.821856,
    ),
)
"""`SPEAKER_FEATURES`' model (`RecallTuning.speaker`), trained on the five LoCoMo development
conversations (balanced logistic loss, L2 10 — the choice of the leave-one-out over all
five; every fused candidate; MiniLM vectors): `python -m bench.locomo_round10 FILE
--weights` prints it. Its means and scales of the 16 are `MODEL`'s (the same rows)."""


MOOD_MODEL: Final = LinearModel(
    mean=(
        *SPEAKER_MODEL.mean,
        0.0430652,
        0.0307093,
        0.0101781,
        0.0240504,
        0.146182,
        0.010299,
        0.0240504,
        0.146182,
    ),
    scale=(
        *SPEAKER_MODEL.scale,
        0.203004,
        0.172529,
        0.0660603,
        0.153206,
        0.709438,
        0.0768126,
        0.153206,
        0.709438,
    ),
    weight=(
        0.00513975,
        0.212649,
        -0.107454,
        -0.241322,
        0.556869,
        -0.430214,
        1.01304,
        -0.63313,
        -0.126425,
        -0.110181,
        0.971949,
        -0.233845,
        0.118575,
        0.386787,
        0.575098,
        -0.043536,
        0.857948,
        -0.118271,
        0.0980026,
        -0.077856,
        0.0107601,
        0.0583497,
        -0.13048,
        0.0770837,
        0.246373,
    ),
)
"""`MOOD_FEATURES`' model (`RecallTuning.speaker` since the twelfth round), trained on the
five LoCoMo development conversations (balanced logistic loss, L2 1 — the choice of the
leave-one-out over all five; every fused candidate; MiniLM vectors): `python -m
bench.locomo_round12 FILE --recall` prints it. Its means and scales of the 17 are
`SPEAKER_MODEL`'s (the same rows; they agree to the printed sixth digit). For a question
that asks for no inference its 8 mood columns are 0, and it ranks by its own weights of the
17 (refitted with the mood: not `SPEAKER_MODEL`'s)."""
