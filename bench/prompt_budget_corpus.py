"""The mixed corpus bench/prompt_budget.py measures the token estimator on.

English and German prose written for this benchmark (chat-like: plans, questions, answers),
Python code and Markdown taken from this repository at run time (agent/, memory/, docs/).
None of it was used to fit the estimator's constants (those were fitted on other text:
docs/context_budget.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from bench._common import REPO_ROOT

ENGLISH = """\
I finally moved the backups to the new NAS last weekend. The old script still pointed at the \
USB disk, so the first night nothing was copied at all, and I only noticed because the report \
mail was suspiciously short.

Could you remind me what we decided about the garden? I think it was tomatoes along the south \
wall and the herbs near the kitchen door, but my partner remembers it the other way round.

The meeting with the landlord went better than expected. He agreed to replace the windows in \
the spring, as long as we keep the heating bills for the winter so he can compare them later.

My daughter starts school in September, and we still have to choose between the one around the \
corner and the bilingual one across the river. The second has a longer commute but smaller classes.

When I run the import on the laptop it takes about forty minutes, while the desktop finishes in \
nine. Both have the same amount of memory, so I suspect the disk, but I have not measured it yet.

Thanks, that worked. The service starts now, although it logs a warning about a missing \
certificate every time. Is that something I should worry about, or can it wait until next week?

We are planning a trip to the coast in August: three days of hiking, one day in the city, and \
hopefully a boat tour if the weather allows it. The dog comes with us, which limits the hotels.

I read the article you summarised yesterday again, and I am not convinced by the second \
argument. The numbers they quote are from a survey with only two hundred participants.
"""

GERMAN = """\
Ich habe am Wochenende endlich die Sicherungen auf das neue NAS umgezogen. Das alte Skript zeigte \
noch auf die USB-Platte, deshalb wurde in der ersten Nacht gar nichts kopiert, und ich habe es nur \
bemerkt, weil der Bericht in der Mail verdächtig kurz war.

Kannst du mich daran erinnern, was wir für den Garten beschlossen haben? Ich glaube, Tomaten an \
der Südwand und die Kräuter neben der Küchentür, aber meine Partnerin erinnert sich umgekehrt.

Das Gespräch mit dem Vermieter lief besser als erwartet. Er will die Fenster im Frühjahr \
austauschen lassen, wenn wir die Heizkostenabrechnungen des Winters aufheben, damit er später \
vergleichen kann.

Meine Tochter kommt im September in die Schule, und wir müssen uns noch zwischen der Grundschule \
um die Ecke und der zweisprachigen Schule auf der anderen Flussseite entscheiden. Die zweite hat \
einen längeren Schulweg, aber kleinere Klassen.

Wenn ich den Import auf dem Laptop laufen lasse, dauert er etwa vierzig Minuten, während der \
Rechner im Arbeitszimmer nach neun Minuten fertig ist. Beide haben gleich viel Arbeitsspeicher, \
also vermute ich die Festplatte, habe es aber noch nicht gemessen.

Danke, das hat funktioniert. Der Dienst startet jetzt, schreibt aber bei jedem Start eine Warnung \
über ein fehlendes Zertifikat ins Protokoll. Muss ich mir darüber Sorgen machen, oder hat das Zeit \
bis nächste Woche?

Wir planen im August eine Reise an die Küste: drei Tage Wandern, einen Tag in der Stadt und, wenn \
das Wetter mitspielt, eine Bootsfahrt. Der Hund kommt mit, was die Auswahl der Hotels einschränkt.

Ich habe den Artikel, den du gestern zusammengefasst hast, noch einmal gelesen, und das zweite \
Argument überzeugt mich nicht. Die Zahlen stammen aus einer Umfrage mit nur zweihundert Teilnehmern.
"""


def _paragraph_chunks(text: str, size: int) -> list[str]:
    """Consecutive paragraphs joined up to about ``size`` characters."""
    chunks: list[str] = []
    current = ""
    for paragraph in re.split(r"\n\s*\n", text):
        if current and len(current) + len(paragraph) > size:
            chunks.append(current.strip())
            current = ""
        current += paragraph + "\n\n"
    if current.strip():
        chunks.append(current.strip())
    return chunks


def _repo_text(pattern: str, limit: int) -> str:
    files = [f for f in sorted(REPO_ROOT.glob(pattern)) if f.name != "context_budget.md"][:limit]
    return "\n\n".join(Path(f).read_text(encoding="utf-8") for f in files)


def corpus() -> dict[str, list[str]]:
    """Chunks of 300-1,500 characters per kind: english, german, code, markdown."""
    return {
        "english": _paragraph_chunks(ENGLISH, 300),
        "german": _paragraph_chunks(GERMAN, 300),
        "code": _paragraph_chunks(_repo_text("memory/*.py", 6), 1500)[:40],
        "markdown": _paragraph_chunks(_repo_text("docs/*.md", 6), 1500)[:40],
    }
