"""German words of the success classifier, as data: space-separated words, comma-separated
phrases. `memory.success_classifier.lexicons` joins them with the English ones."""

from memory.success_classifier.kinds import Kind

# Words that never name a project, host or database.
STOP = """
der die das den dem des ein eine einen einem einer es ich wir mich uns mein meine meinen
unser unsere unseren jetzt gerade eben endlich erfolgreich heute gestern wieder auch noch
schon dann mit nach auf zu zur zum von vom über per hat haben habe hab ist sind war wurde
geklappt klappt funktioniert alles und oder aber bei im am für durch sauber direkt grün
"""
# Head nouns dropped from a name ("Staging-Datenbank" → Staging).
GENERIC = """
datenbank verbindung zugang anwendung projekt seite dienst rechner maschine umgebung
schlüssel
"""
ENV = {"produktion": "prod"}
ENV_WORDS = "produktion"

# Event keywords by kind, matched on words.
DEPLOY_KEYWORDS = "deployt deployen deploye ausgerollt veröffentlicht"
BUILD_KEYWORDS = "gebaut"
TEST_KEYWORDS = "testlauf testläufe"
DB_KEYWORDS = ""
AUTH_KEYWORDS = "angemeldet eingeloggt"
KEYWORD_PREFIXES: dict[str, Kind] = {
    "datenbank": "db",
    "kompilier": "build",
    **dict.fromkeys(("authentifizier", "anmeld", "einlogg"), "auth"),
}
LOGIN_WORDS = "angemeldet eingeloggt"
LOGIN_PREFIXES = "anmeld einlogg"
PLACE_NOUNS = "maschine rechner daten ordner verzeichnis skript"
AFTER_BAUT = "jetzt wieder durch sauber"  # "baut" alone is not about a build

# Cues that silence a success report (with the negations and uncertainty words of
# memory.text.cues).
FAILURE = """
fehlgeschlagen kaputt abgestürzt abgesturzt stürzt sturzt absturz gescheitert scheitert
rot verweigert abgelehnt hängt hangt klemmt zickt außer ausser
"""
FAILURE_PREFIXES = "fehler"
FAILURE_PHRASES = "schlägt fehl, schlagt fehl, schlug fehl"
HEDGE = """
wenn falls sobald ob werde werden wird wirst soll sollen muss müssen will
hoffentlich hoffe vermutlich wohl anscheinend scheint scheinbar glaube
denke morgen später nachher bald demnächst fast teilweise einige manche manchmal meistens
plane prüfe prüfen prüft sicherstellen
"""
HEDGE_PREFIXES = "würde sollte könnte müsste dürfte möchte versuche probiere überprüf"
# A reply sentence that opens with one of these is advice, not a report.
ADVICE_OPENERS = "führe nutze verwende probiere prüfe starte installiere teste baue logge melde"

# Rules: words that end like an infinitive but are none, words before immer/nie that are
# no imperative, and imperative stems that do not end in -e.
NOT_INFINITIVES = """
den dem einen keinen meinen deinen seinen ihren unseren euren diesen jeden allen vielen
anderen morgen eben oben unten neben zwischen wegen gegen wenn denen
"""
NOT_IMPERATIVES = """
es er sie ich wir ihr man das der die dies dieses hab habe bin war hatte ist sind kann
muss will mag weiß weiss glaube denke hoffe finde meine sehe verstehe so da dann aber und
doch ja nein warum wieso wie was wer danke also klar gut auch immer nie jetzt heute geht
läuft klappt stürzt hat wird leider eigentlich irgendwie schade wieder noch schon gerade
"""
IMPERATIVE_STEMS = """
mach nimm gib lies lass fass push lösch nutz schreib sag geh trag zieh bau frag hör schau
check merge commit deploy test vergiss
"""
STANDING_NOT_VERBS = "ich wir du es er sie man das der die alles"
RULE_DROP = "der die das den dem des ein eine einen einem einer bitte"

# Subjects: prepositions that end a name.
STOP_PREPOSITIONS = "nach auf zu zur zum mit über per und"
ABBREVIATIONS = "z.b. z. b. bzw. usw. ca. d.h. d. h. nr. inkl. evtl."
