"""English words of the success classifier, as data: space-separated words, comma-separated
phrases. `memory.success_classifier.lexicons` joins them with the German ones."""

from memory.success_classifier.kinds import Kind

# Words that never name a project, host or database.
STOP = """
the a an this that these those it its my our your their his her them me us we i you all
every everything again now just finally successfully also still yesterday today tonight
tomorrow already then there here with without via using to into onto on in at from for of
by and or but is are was were be been has have had did does do works worked working work
succeeded passed passes fine well properly correctly smoothly first last new latest whole
entire full local locally manually automatically ok okay too as so after before over
through live up out some most any both one two ever right went goes ran runs took finished
completed green like success successful done good great nice perfect
monday tuesday wednesday thursday friday saturday sunday morning evening night week time
try attempt charm
"""
# Head nouns dropped from a name ("the staging server" → staging).
GENERIC = """
app application site website page service services code changes change stuff project
thing things server servers host machine box vm instance database databases db
environment env script scripts pipeline repo repository build builds deploy deployment
release version it laptop computer bucket cluster connection access
login tests test suite image container artifact artifacts package packages
key keys agent tunnel config client cli job jobs run runs
"""
ENV = {"production": "prod", "live": "prod", "stage": "staging"}
ENV_WORDS = "prod production staging stage dev live"

# Event keywords by kind, matched on words.
DEPLOY_KEYWORDS = """
deploy deploys deployed deploying deployment deployments redeploy redeploys redeployed
redeploying rollout released publish published publishing shipped
"""
BUILD_KEYWORDS = """
build builds built building compile compiles compiled compiling compilation packaging
packaged bundle bundled bundling
"""
TEST_KEYWORDS = "test tests suite testsuite specs checks"
DB_KEYWORDS = "database databases db dbs"
AUTH_KEYWORDS = "login auth token sso oauth credential credentials"
KEYWORD_PREFIXES: dict[str, Kind] = {"authenticat": "auth", "authori": "auth"}
# A keyword of two words: first word → (second word, kind).
KEYWORD_PHRASES: dict[str, tuple[tuple[str, Kind], ...]] = {
    "roll": (("out", "deploy"),),
    "rolled": (("out", "deploy"),),
    "log": (("in", "auth"), ("into", "auth")),
    "logged": (("in", "auth"), ("into", "auth")),
    "logging": (("in", "auth"), ("into", "auth")),
    "sign": (("in", "auth"),),
    "signed": (("in", "auth"),),
    "signing": (("in", "auth"),),
}
LOGIN_WORDS = "login log logged logging sign signed signing"
NOT_AFTER_DEPLOY = "key keys token tokens"  # a deploy key is an SSH key
PLACE_NOUNS = (
    "server servers host hosts machine box vm node agent data folder directory dir script log logs"
)

# Cues that silence a success report (with the negations and uncertainty words of
# memory.text.cues).
FAILURE = """
fail fails failed failing failure failures broke broken breaks breaking crash crashes
crashed crashing error errors errored exception exceptions traceback denied refused
rejected timeout timeouts timedout hang hangs hung stuck red abort aborted aborts aborting
flaky unable unreachable forbidden unauthorized unauthorised wrong except excepting
"""
FAILURE_PREFIXES = "segfault"
FAILURE_PHRASES = "timed out, times out, timing out, time out, apart from"
# Negations: memory.text.cues; n't as a suffix.
NEGATION_SUFFIXES = "n't"
HEDGE = """
if when whenever once unless until whether will would should may must shall gonna
hope hopefully think guess believe suppose assume seem seems
seemed apparently supposed verify ensure confirm expect expected tomorrow later next soon
almost nearly partially partly mostly some most sometimes occasionally intermittently
i'll you'll we'll they'll it'll he'll she'll that'll i'd you'd we'd they'd it'd he'd
she'd that'd
"""
HEDGE_PHRASES = """in case, as soon as, going to, want to, wants to, wanted to, need to, needs to,
have to, has to, try to, trying to, about to, plan to, planning to, look like, looks like,
check that, check whether, check if, checking that, checking whether, checking if, make sure,
like this, like so, as follows, works by"""
HEDGE_UNLESS_NEXT = {"could": "now finally again"}  # "could now" reports, "could" alone hedges
# A reply sentence that opens with one of these is advice, not a report.
ADVICE_OPENERS = """
run use try make check deploy build test ssh install add set type execute open verify
ensure rerun re-run start push log connect let's lets please first then next
"""

# Questions: "was able to …" after a question word is a statement.
NOT_QUESTION_SECOND = "able finally now successfully again"

# Rules: words after always/never that are no base-form verb, and verbs that look like one.
NOT_VERBS = """
mind again ever been was were is are am had has did does the a an my this that it so same
fun happens know worry bother care think understand like want need see feel believe
recall agree expect liked get got have sure really nice good great fun happy glad awesome
better worse interesting annoying hard easy fine busy late early there here thought knew
said made went came saw took found felt told left ran began wrote bought brought caught
taught heard meant kept slept spent sent built lost paid stood understood won forgot gave
broke seen been done gone given taken written broken forgotten gotten known shown
"""
VERB_EXCEPTIONS = """
need feed seed embed proceed exceed succeed speed shed shred bring ping string sing
access pass press process discuss focus bypass address
"""
STANDING_NOT_VERBS = """
i we you it he she they this that there the a an my our your his her its their all
everything nothing something
"""
RULE_DROP = "the a an please"

# Subjects: words before "to" that make it no destination, prepositions that end a name.
NOT_DEST_BEFORE = """
able managed want wants wanted need needs have has had going try trying tried how used
about due like got seems started began went back
"""
STOP_PREPOSITIONS = "to into onto on in with via using from by and"
ABBREVIATIONS = "e.g. i.e. etc. vs. cf. approx."
