"""The success classifier's labelled table, shared by its tests and `bench.fact_classifier`.

`LABELLED` rows are (speaker, sentence, expected type or None, expected key or None). It mixes
English and German positives of every kind (deploy, build, test, ssh, database, auth, rules, a
deploy procedure) with look-alike negatives of every kind the classifier must stay silent on:
failures, questions, hypotheticals and plans, negated success, trivial one-offs, frequency
words that are not imperatives, style requests to the assistant, and advice in the reply.

How honest the numbers are: the first block of rows was written together with the classifier,
so it scores high by construction. Later blocks were each written and labelled before they were
first run; their first scores are recorded in the comments above them, and the last block is
still held out (`HELD_OUT_FROM`; only two bugs it showed were fixed). Rows the classifier gets
wrong stay in the table ("blyck is live on S3 now" names no event; "We never deploy on
Fridays" is a convention, not an imperative).

Scoring (`score`): positive = a proposal is made. A proposal of the expected type and key is a
true positive; one with the wrong type or key counts as a false positive AND a false negative;
a proposal where none is expected is a false positive; silence where one is expected is a false
negative. With ``exact=False`` any proposal for an expected one counts (event detection alone).
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.success_classifier import classify_sentence

Row = tuple[str, str, str | None, str | None]

LABELLED: list[Row] = [
    # --- success events, user, English
    (
        "user",
        "I just deployed blyck to S3 with `aws s3 cp`, it worked",
        "capability",
        "deploy:blyck",
    ),
    ("user", "deploy to prod succeeded", "capability", "deploy:prod"),
    ("user", "the build passed", "capability", "build:workspace"),
    ("user", "all 312 tests passed", "capability", "test:workspace"),
    ("user", "ssh into db01 works now", "capability", "ssh:db01"),
    ("user", "logged in with gh auth login successfully", "capability", "auth:gh"),
    ("user", "psql connection to the staging database works", "capability", "db:staging"),
    ("user", "npm run build passes now", "capability", "build:npm"),
    ("user", "pytest is green again after the fix", "capability", "test:pytest"),
    ("user", "`cargo build --release` went through without errors", "capability", "build:cargo"),
    ("user", "Finally got ssh to bastion-2 working!", "capability", "ssh:bastion-2"),
    ("user", "I was able to log in with `docker login ghcr.io`", "capability", "auth:docker"),
    ("user", "Connected to postgres on db02 with psql, works fine", "capability", "db:db02"),
    ("user", "The integration tests pass on my machine now", "capability", "test:integration"),
    ("user", "Successfully deployed the docs site to Netlify", "capability", "deploy:docs"),
    ("user", "the blyck deploy to staging worked on the first try", "capability", "deploy:blyck"),
    ("user", "Published blyck 0.4.1 to PyPI with twine, it worked", "capability", "deploy:blyck"),
    ("user", "The docker image builds cleanly now", "capability", "build:docker"),
    ("user", "I can now ssh into the staging server", "capability", "ssh:staging"),
    ("user", "aws sso login worked", "capability", "auth:aws"),
    ("user", "npm test passes", "capability", "test:npm"),
    ("user", "CI is green on the release branch", "capability", "test:ci"),
    (
        "user",
        "I managed to connect to the analytics database with DBeaver",
        "capability",
        "db:analytics",
    ),
    ("user", "scp to db01 works too", "capability", "ssh:db01"),
    (
        "user",
        "Took three tries, but the deploy to production finally worked",
        "capability",
        "deploy:prod",
    ),
    ("user", "Thanks, `gh auth login` did the trick", "capability", "auth:gh"),
    ("user", "db01 is reachable over ssh now", "capability", "ssh:db01"),
    ("user", "tests passed, I'll deploy tomorrow", "capability", "test:workspace"),
    ("user", "No errors this time, the frontend build passed", "capability", "build:frontend"),
    ("user", "vercel deploy worked", "capability", "deploy:vercel"),
    (
        "user",
        "Deployed blyck by running `npm run build` and then `aws s3 sync dist s3://blyck-site`,"
        " worked like a charm",
        "procedure",
        "deploy:blyck",
    ),
    ("user", "blyck is live on S3 now", "capability", "deploy:blyck"),  # honest miss: no event word
    ("user", "the wheel builds with uv now", "capability", "build:uv"),
    # --- success events, user, German
    ("user", "Das Deployment nach S3 hat geklappt", "capability", "deploy:s3"),
    ("user", "Build erfolgreich", "capability", "build:workspace"),
    ("user", "Tests laufen grün", "capability", "test:workspace"),
    ("user", "SSH-Zugang zu db01 funktioniert", "capability", "ssh:db01"),
    ("user", "Login mit gh auth hat funktioniert", "capability", "auth:gh"),
    ("user", "Ich habe blyck erfolgreich nach S3 deployt", "capability", "deploy:blyck"),
    ("user", "Die Verbindung zur Staging-Datenbank klappt jetzt", "capability", "db:staging"),
    ("user", "pytest läuft durch", "capability", "test:pytest"),
    ("user", "Der npm-Build läuft wieder sauber durch", "capability", "build:npm"),
    ("user", "Konnte mich per ssh auf db01 einloggen", "capability", "ssh:db01"),
    ("user", "docker login bei ghcr.io hat geklappt", "capability", "auth:docker"),
    ("user", "Deploy auf prod ging ohne Probleme durch", "capability", "deploy:prod"),
    ("user", "Alle Integrationstests bestanden", "capability", "test:integration"),
    ("user", "Hat geklappt, das Deployment nach S3", "capability", "deploy:s3"),
    ("user", "Mit psql komme ich jetzt auf die PROD-Datenbank", "capability", "db:prod"),
    # --- success events, assistant reply (observed results)
    ("assistant", "The deployment succeeded: blyck is live on S3.", "capability", "deploy:s3"),
    ("assistant", "All 48 tests passed.", "capability", "test:workspace"),
    ("assistant", "The build completed successfully.", "capability", "build:workspace"),
    ("assistant", "Login via `gh auth login` succeeded.", "capability", "auth:gh"),
    ("assistant", "I ran `pytest` and all tests passed.", "capability", "test:pytest"),
    ("assistant", "Tests passed: 312 passed, 0 failed.", "capability", "test:workspace"),
    (
        "assistant",
        "Die Verbindung zur Staging-Datenbank wurde erfolgreich hergestellt.",
        "capability",
        "db:staging",
    ),
    # --- rules, English
    ("user", "never touch PROD", "rule", "rule:never-touch-prod"),
    ("user", "always use uv instead of pip", "rule", "rule:always-use-uv-instead-of-pip"),
    ("user", "don't push to main without review", "rule", "rule:never-push-to-main-without-review"),
    ("user", "Please never commit .env files.", "rule", "rule:never-commit-env-files"),
    (
        "user",
        "From now on, run the linter before every commit",
        "rule",
        "rule:run-linter-before-every-commit",
    ),
    (
        "user",
        "Do not run migrations on the production database without a backup",
        "rule",
        "rule:never-run-migrations-on-production-database-without-backup",
    ),
    (
        "user",
        "You must never force-push to a shared branch",
        "rule",
        "rule:never-force-push-to-shared-branch",
    ),
    ("user", "If the tests fail, never deploy", "rule", "rule:if-tests-fail-never-deploy"),
    (
        "user",
        "Always run `terraform plan` before `terraform apply` in every project",
        "rule",
        "rule:always-run-terraform-plan-before-terraform-apply",
    ),
    (
        "user",
        "Remember: always run migrations with --dry-run first",
        "rule",
        "rule:always-run-migrations-with-dry-run-first",
    ),
    # --- rules, German
    ("user", "nie direkt auf main pushen", "rule", "rule:nie-direkt-auf-main-pushen"),
    ("user", "immer pnpm verwenden", "rule", "rule:immer-pnpm-verwenden"),
    ("user", "niemals die PROD-Datenbank anfassen", "rule", "rule:niemals-prod-datenbank-anfassen"),
    ("user", "Verwende überall immer uv statt pip", "rule", "rule:verwende-immer-uv-statt-pip"),
    (
        "user",
        "Bitte keine Secrets ins Repo committen",
        "rule",
        "rule:keine-secrets-ins-repo-committen",
    ),
    ("user", "Pushe nie ohne Review auf main", "rule", "rule:pushe-nie-ohne-review-auf-main"),
    (
        "user",
        "Ab sofort Migrationen nur mit Backup ausführen",
        "rule",
        "rule:migrationen-nur-mit-backup-ausführen",
    ),
    # --- negatives: failures
    ("user", "the deploy failed", None, None),
    ("user", "build broke again after the merge", None, None),
    ("user", "tests are failing on CI", None, None),
    ("user", "permission denied when I ssh into db01", None, None),
    ("user", "Deployment ist fehlgeschlagen", None, None),
    ("user", "klappt nicht", None, None),
    ("user", "Der Build ist kaputt", None, None),
    ("user", "psql: connection refused on the staging database", None, None),
    ("user", "The deploy worked, but then the site crashed", None, None),
    ("user", "gh auth login times out", None, None),
    ("user", "Tests sind rot", None, None),
    ("user", "Everything works except gh auth login", None, None),
    ("user", "Some tests pass, the rest still hang", None, None),
    ("assistant", "The build failed with exit code 2.", None, None),
    # --- negatives: questions
    ("user", "did the deploy work?", None, None),
    ("user", "how do I deploy?", None, None),
    ("user", "can you always answer in English?", None, None),
    ("user", "Hat das Deployment geklappt?", None, None),
    ("user", "is ssh to db01 working now", None, None),
    ("user", "Läuft der Build durch", None, None),
    ("user", "Should I always use uv?", None, None),
    # --- negatives: hypotheticals, plans, hedges
    ("user", "I will deploy tomorrow", None, None),
    ("user", "if the build passes, we ship it", None, None),
    ("user", "wenn der Build durchläuft, deployen wir", None, None),
    ("user", "Once the tests pass I'll merge", None, None),
    ("user", "the deploy should work now", None, None),
    ("user", "I hope the login with gh works this time", None, None),
    ("user", "Morgen deployen wir nach S3, das wird schon klappen", None, None),
    ("user", "I think the tests passed, not sure", None, None),
    ("user", "Falls der Login bei docker klappt, melde ich mich", None, None),
    ("user", "The build passes when I disable the cache", None, None),
    # --- negatives: negated success
    ("user", "the deploy didn't work", None, None),
    ("user", "hat nicht geklappt", None, None),
    ("user", "ssh into db01 still doesn't work", None, None),
    ("user", "Der Login mit gh funktioniert noch nicht", None, None),
    ("user", "The build never passed on Windows", None, None),
    ("user", "No luck with ssh into db01", None, None),
    # --- negatives: trivial one-offs and subject-less thanks
    ("user", "I opened the README", None, None),
    ("user", "hi", None, None),
    ("user", "thanks, that worked", None, None),
    ("user", "ok that works, thanks!", None, None),
    ("user", "I read through deploy.md", None, None),
    ("user", "I ran the tests", None, None),
    ("user", "Danke, hat geklappt!", None, None),
    ("user", "It works on my machine", None, None),
    ("user", "I deployed blyck to S3", None, None),
    ("user", "Deploying blyck to S3 now", None, None),
    ("user", "Tests laufen noch", None, None),
    ("user", "Das Deployment läuft gerade", None, None),
    ("user", "I'm working on the deploy script", None, None),
    ("user", "I logged in to check the logs, works", None, None),
    # --- negatives: frequency words, not imperatives
    ("user", "it always crashes", None, None),
    ("user", "I never liked Java", None, None),
    ("user", "es stürzt immer ab", None, None),
    ("user", "Never mind, I found it", None, None),
    ("user", "Don't worry about the formatting", None, None),
    ("user", "We always deployed on Fridays back then", None, None),
    ("user", "Immer noch kaputt", None, None),
    ("user", "I always forget the flags for tar", None, None),
    ("user", "Always the same error with this build", None, None),
    ("user", "Don't know why the build broke", None, None),
    ("user", "Nie wieder Java", None, None),
    ("user", "never deployed on a Friday", None, None),
    # --- negatives: style requests to the assistant (not project rules)
    ("user", "Always answer in German", None, None),
    ("user", "Antworte bitte immer auf Deutsch", None, None),
    ("user", "never use emojis in your replies", None, None),
    # --- negatives: the reply's advice, rules and descriptions
    ("assistant", "You can deploy with `aws s3 cp dist s3://blyck --recursive`.", None, None),
    ("assistant", "Run `pytest -q`; all tests should pass.", None, None),
    ("assistant", "Never touch PROD without a backup.", None, None),
    ("assistant", "If SSH works, try psql next.", None, None),
    ("assistant", "A successful deploy prints the bucket URL.", None, None),
    ("assistant", "Once you are logged in with `gh auth login`, pushing works.", None, None),
    ("assistant", "It looks like the deploy succeeded.", None, None),
    ("assistant", "Always use uv instead of pip.", None, None),
    # --- a second batch, written after the classifier and kept as labelled (not tuned)
    (
        "user",
        "Rolled out blyck 2.0 to production this morning, all good",
        "capability",
        "deploy:blyck",
    ),
    ("user", "Our e2e tests are passing again", "capability", "test:e2e"),
    ("user", "ssh -i ~/.ssh/deploy_key admin@web-03 works", "capability", "ssh:web-03"),
    ("user", "I could finally connect to MySQL on the reporting box", "capability", "db:reporting"),
    ("user", "Authenticated against Vault with my token, it worked", "capability", "auth:vault"),
    ("user", "gradle build is green now", "capability", "build:gradle"),
    ("user", "make test passes on the new laptop", "capability", "test:make"),
    ("user", "The Docker build finished successfully", "capability", "build:docker"),
    ("user", "Die Unit-Tests laufen alle grün", "capability", "test:unit"),
    ("user", "Der Login bei AWS per SSO klappt", "capability", "auth:aws"),
    ("user", "Deployment von blyck auf staging war erfolgreich", "capability", "deploy:blyck"),
    ("user", "Ich kann mich jetzt per SSH auf web-03 verbinden", "capability", "ssh:web-03"),
    ("user", "Der Build mit cargo ging durch", "capability", "build:cargo"),
    ("user", "npm publish worked, blyck 1.3 is on the registry", "capability", "deploy:blyck"),
    (
        "assistant",
        "The SSH connection to db01 was established successfully.",
        "capability",
        "ssh:db01",
    ),
    ("assistant", "Die Tests sind durchgelaufen, alle 87 grün.", "capability", "test:workspace"),
    ("user", "the staging deploy went fine", "capability", "deploy:staging"),
    ("user", "Logged into the GitHub CLI, works", "capability", "auth:github"),
    ("user", "The deploy to prod took forever but eventually worked", "capability", "deploy:prod"),
    ("user", "Can't believe the deploy worked on the first try", "capability", "deploy:workspace"),
    (
        "assistant",
        "Your tests passed in CI, so the change is safe to merge.",
        "capability",
        "test:ci",
    ),
    (
        "user",
        "Never run `terraform destroy` on the shared account",
        "rule",
        "rule:never-run-terraform-destroy-on-shared-account",
    ),
    (
        "user",
        "Always rebase onto main before opening a PR",
        "rule",
        "rule:always-rebase-onto-main-before-opening-pr",
    ),
    (
        "user",
        "Don't ever store credentials in the repo",
        "rule",
        "rule:never-store-credentials-in-repo",
    ),
    (
        "user",
        "Bitte immer erst die Tests laufen lassen, bevor du pushst",
        "rule",
        "rule:immer-erst-tests-laufen-lassen",
    ),
    ("user", "Keine Force-Pushes auf main", "rule", "rule:keine-force-pushes-auf-main"),
    ("user", "We never deploy on Fridays", "rule", "rule:never-deploy-on-fridays"),
    ("user", "I tried to ssh into db01 but got a timeout", None, None),
    ("user", "The login page of blyck works", None, None),
    ("user", "Our test server is down", None, None),
    ("user", "Build times went from 5 to 2 minutes", None, None),
    ("user", "I tested the new login flow manually", None, None),
    ("user", "Never thought the build would pass", None, None),
    ("user", "Die Tests sind nicht mehr grün", None, None),
    ("user", "Wie deploye ich nach S3?", None, None),
    ("assistant", "To check that the deployment worked, open the bucket URL.", None, None),
    ("user", "hi, hope you're well", None, None),
    ("user", "That worked, thanks a lot!", None, None),
    ("user", "Perfect, works!", None, None),
    ("user", "The deploy key works for read access only", None, None),
    ("user", "I always test in staging first", None, None),
    ("user", "Never had a problem with the build", None, None),
    # --- a third batch, written after the second round of fixes and kept as labelled
    ("user", "The tests passed yesterday, today they fail", None, None),
    ("user", "Login works in the browser but not in the CLI", None, None),
    ("user", "I wonder if ssh into db01 works from the VPN", None, None),
    ("user", "Build successful? Not quite.", None, None),
    ("user", "The build passing is a prerequisite for deploy", None, None),
    ("user", "Test the login with gh before you deploy", None, None),
    ("user", "Successful deploys are announced in #releases", None, None),
    ("user", "Passing tests don't mean the feature works", None, None),
    ("user", "Remember when the deploy to prod worked without a hitch?", None, None),
    ("user", "ssh works for everyone else", None, None),
    ("user", "Always the deploy script that breaks", None, None),
    ("user", "Never works on the first try, this build", None, None),
    ("user", "immer wieder dasselbe mit dem Login", None, None),
    ("user", "Nie funktioniert der Login beim ersten Mal", None, None),
    ("user", "Die Datenbank läuft wieder", None, None),
    ("user", "Do the tests pass on your side?", None, None),
    (
        "assistant",
        "Here's a script that deploys blyck and prints 'Deploy succeeded' when it works.",
        None,
        None,
    ),
    ("assistant", "The tests passed in my simulated run, but I cannot run code.", None, None),
    ("user", "Always deploying on Fridays was a mistake", None, None),
    ("assistant", "Great — the deploy to S3 worked!", "capability", "deploy:s3"),
    ("user", "Never push to main, the build broke last time", "rule", "rule:never-push-to-main"),
    ("user", "Nie wieder ohne Backup migrieren", "rule", "rule:nie-wieder-ohne-backup-migrieren"),
    (
        "user",
        "Always use the staging profile when you deploy blyck",
        "rule",
        "rule:always-use-staging-profile-when-you-deploy-blyck",
    ),
    ("user", "Don't touch the PROD database, ever", "rule", "rule:never-touch-prod-database"),
    ("user", "Do not use sudo with pip", "rule", "rule:never-use-sudo-with-pip"),
    (
        "user",
        "Just got `kubectl` talking to the prod cluster, auth works",
        "capability",
        "auth:kubectl",
    ),
    ("user", "Postgres on db03 accepts my connection now", "capability", "db:db03"),
    ("user", "rsync to the backup host via ssh works fine now", "capability", "ssh:backup"),
    ("user", "Tests auf dem CI sind wieder grün", "capability", "test:ci"),
    ("user", "Das Docker-Image baut wieder", "capability", "build:docker"),
    ("user", "Finally, the Android build compiles again", "capability", "build:android"),
    ("user", "Der Release nach PyPI hat funktioniert", "capability", "deploy:pypi"),
    ("assistant", "Authentication with `az login` succeeded.", "capability", "auth:az"),
    ("user", "Connection to redis on cache-01 works", "capability", "db:cache-01"),
    # --- the first held-out batch (see below): fixes were made after it was scored
    ("user", "Just pushed blyck to Heroku and the deploy succeeded", "capability", "deploy:blyck"),
    ("user", "My SSH key finally works with github.com", "capability", "ssh:github.com"),
    ("user", "The unit tests are all green again", "capability", "test:unit"),
    ("user", "Der Deploy nach Fly.io lief sauber durch", "capability", "deploy:fly.io"),
    ("user", "Verbindung zu db02 per psql steht", "capability", "db:db02"),
    (
        "user",
        "I've successfully authenticated with `gcloud auth login`",
        "capability",
        "auth:gcloud",
    ),
    ("user", "`make build` completes without warnings now", "capability", "build:make"),
    ("user", "Der Login in die Azure CLI mit az login hat funktioniert", "capability", "auth:az"),
    ("assistant", "The rollout to staging completed successfully.", "capability", "deploy:staging"),
    ("user", "CI pipeline passed on my branch", "capability", "test:ci"),
    ("user", "Finally managed to ssh into the Raspberry Pi", "capability", "ssh:raspberry-pi"),
    ("user", "the mysql connection to analytics-db works now", "capability", "db:analytics-db"),
    (
        "user",
        "Always pin dependency versions in requirements files",
        "rule",
        "rule:always-pin-dependency-versions-in-requirements-files",
    ),
    (
        "user",
        "Never share the staging credentials in chat",
        "rule",
        "rule:never-share-staging-credentials-in-chat",
    ),
    (
        "user",
        "Bitte niemals `git push --force` auf main verwenden",
        "rule",
        "rule:niemals-git-push-force-auf-main-verwenden",
    ),
    (
        "user",
        "Lösche nie Branches ohne Rückfrage",
        "rule",
        "rule:lösche-nie-branches-ohne-rückfrage",
    ),
    (
        "user",
        "From now on, always write tests before the fix",
        "rule",
        "rule:always-write-tests-before-fix",
    ),
    ("user", "Should we deploy blyck today or tomorrow", None, None),
    ("user", "The deploy ran for 20 minutes and then hung", None, None),
    ("user", "I'm not sure the login worked", None, None),
    ("user", "Ich teste gerade, ob der SSH-Zugang klappt", None, None),
    ("user", "Build logs are in /var/log/build", None, None),
    ("user", "Deployments used to work before the migration", None, None),
    ("user", "That command always works for me", None, None),
    ("user", "never heard of blyck before", None, None),
    ("user", "Always nice to see green tests", None, None),
    ("assistant", "You should see 'Deployment successful' once it finishes.", None, None),
    ("assistant", "After a successful login, gh stores the token in your keyring.", None, None),
    ("user", "Die Tests würden durchlaufen, wenn der Mock stimmt", None, None),
    ("user", "Deploy hat gestern funktioniert, heute nicht mehr", None, None),
    ("user", "The SSH tunnel to the db works but is slow", None, None),
    ("user", "I need the staging database credentials", None, None),
    # --- the second held-out batch (see below): fixes were made after it was scored
    (
        "user",
        "ok so `terraform apply` worked and blyck is deployed to eu-west-1",
        "capability",
        "deploy:blyck",
    ),
    ("user", "Hab mich gerade erfolgreich bei npm eingeloggt", "capability", "auth:npm"),
    ("user", "psql -h db04 -U app works from the jump host", "capability", "db:db04"),
    ("user", "The e2e suite passed on the first run", "capability", "test:e2e"),
    # labelled ssh:build-server at first; the documented scheme drops a generic head noun
    # ("the staging server" → staging), so the label was corrected to ssh:build
    ("user", "SSH auf den Build-Server klappt wieder", "capability", "ssh:build"),
    ("user", "Our Jenkins job built the wheel successfully", "capability", "build:jenkins"),
    (
        "user",
        "Deploying to Cloudflare Pages with wrangler works now",
        "capability",
        "deploy:cloudflare-pages",
    ),
    (
        "user",
        "Die Anmeldung an der Registry mit docker login ging durch",
        "capability",
        "auth:docker",
    ),
    ("assistant", "All checks passed on the pull request.", "capability", "test:workspace"),
    ("user", "we got the staging DB connection working with pgbouncer", "capability", "db:staging"),
    (
        "user",
        "The login to the Grafana dashboard works with my SSO account",
        "capability",
        "auth:grafana",
    ),
    ("user", "cargo test is green on nightly", "capability", "test:cargo"),
    ("user", "the Android app compiles fine with Gradle 8", "capability", "build:gradle"),
    ("user", "Tests für das Backend laufen durch", "capability", "test:backend"),
    ("user", "Never log personal data", "rule", "rule:never-log-personal-data"),
    (
        "user",
        "Always run `ruff format` before committing",
        "rule",
        "rule:always-run-ruff-format-before-committing",
    ),
    (
        "user",
        "Please don't restart the prod database during business hours",
        "rule",
        "rule:never-restart-prod-database-during-business-hours",
    ),
    (
        "user",
        "Niemals Migrationen direkt auf PROD ausführen",
        "rule",
        "rule:niemals-migrationen-direkt-auf-prod-ausführen",
    ),
    (
        "user",
        "Committe nie direkt auf den release-Branch",
        "rule",
        "rule:committe-nie-direkt-auf-release-branch",
    ),
    (
        "user",
        "Going forward, use conventional commit messages",
        "rule",
        "rule:use-conventional-commit-messages",
    ),
    (
        "user",
        "Do not merge PRs without a green CI run",
        "rule",
        "rule:never-merge-prs-without-green-ci-run",
    ),
    ("user", "Why does the deploy keep failing?", None, None),
    ("user", "the build works on CI but not locally", None, None),
    ("user", "Tests are flaky again", None, None),
    ("user", "Gestern hat der Login noch geklappt", None, None),
    ("user", "If ssh to db01 works I'll let you know", None, None),
    ("user", "I'm about to deploy blyck", None, None),
    ("user", "Did anyone get psql working with the new certs", None, None),
    ("user", "Never seen a build this slow", None, None),
    ("user", "I always run the tests twice", None, None),
    ("user", "It never deploys on the first try", None, None),
    ("user", "Login klappt nur manchmal", None, None),
    ("user", "Tried the deploy again, same 502", None, None),
    ("assistant", "Make sure the tests pass before you tag the release.", None, None),
    ("assistant", "The deploy works like this: build, upload, invalidate.", None, None),
    ("assistant", "Successful builds are cached for 7 days.", None, None),
    ("user", "Can you check whether the login worked?", None, None),
    ("user", "Thanks, that fixed it", None, None),
    ("user", "nice, works", None, None),
    ("user", "ssh-agent is running", None, None),
    ("user", "Always happy to pair on the deploy", None, None),
    ("user", "Die Datenbank-Migration hat funktioniert", None, None),
    # --- held out: written and labelled (by the documented key scheme) before it was first
    # run. `HELD_OUT_FROM` marks where it starts; the bench reports it separately. First
    # score: precision 0.950, recall 0.826 (tp 19, fp 1, fn 4, tn 17). Two bugs it showed
    # were fixed afterwards, nothing else: a keyword inside a joined host name ("ssh to
    # ci-runner-7" read "ci" as a test event) and "shipped" missing from the deploy words.
    # The two batches above were held out too when they were written: 0.588 / 0.588 and
    # 0.682 / 0.714 precision / recall before the fixes they prompted (most of those misses
    # were the right event under another key).
    (
        "user",
        "Heads up: the blyck deployment to staging went through",
        "capability",
        "deploy:blyck",
    ),
    ("user", "Just verified that ssh to ci-runner-7 works", "capability", "ssh:ci-runner-7"),
    ("user", "docker build -t blyck . worked on the first try", "capability", "build:docker"),
    ("user", "Ich habe die Tests mit pytest laufen lassen, alle grün", "capability", "test:pytest"),
    ("user", "Login bei GitLab per glab auth login hat geklappt", "capability", "auth:glab"),
    ("user", "The connection to the orders database finally works", "capability", "db:orders"),
    ("user", "uv build produces the wheel fine now", "capability", "build:uv"),
    ("assistant", "The SSH login to bastion succeeded.", "capability", "ssh:bastion"),
    ("user", "Deployment auf Vercel erfolgreich", "capability", "deploy:vercel"),
    ("user", "integration tests for the API pass now", "capability", "test:integration"),
    ("user", "I can finally log in to the AWS console with SSO", "capability", "auth:aws"),
    ("user", "redis-cli -h cache-02 ping works", "capability", "db:cache-02"),
    ("user", "Die Datenbankverbindung zu pg-main funktioniert", "capability", "db:pg-main"),
    ("user", "Shipped blyck v3 to production, all good", "capability", "deploy:blyck"),
    ("user", "The frontend build passed after clearing the cache", "capability", "build:frontend"),
    (
        "user",
        "Never commit directly to the release branch",
        "rule",
        "rule:never-commit-directly-to-release-branch",
    ),
    (
        "user",
        "Always squash commits before merging",
        "rule",
        "rule:always-squash-commits-before-merging",
    ),
    (
        "user",
        "Don't use `latest` tags for Docker images",
        "rule",
        "rule:never-use-latest-tags-for-docker-images",
    ),
    (
        "user",
        "Immer mit `--dry-run` testen, bevor du etwas löschst",
        "rule",
        "rule:immer-mit-dry-run-testen",
    ),
    ("user", "Nutze nie globale pip installs", "rule", "rule:nutze-nie-globale-pip-installs"),
    (
        "user",
        "You must always run the migrations in a transaction",
        "rule",
        "rule:always-run-migrations-in-transaction",
    ),
    (
        "user",
        "In every project, never store secrets in .env.example",
        "rule",
        "rule:never-store-secrets-in-env.example",
    ),
    ("user", "Wir sollten immer Backups machen", "rule", "rule:wir-sollten-immer-backups-machen"),
    ("user", "does ssh to db01 work for you?", None, None),
    ("user", "The deploy to prod broke the checkout page", None, None),
    ("user", "I'll try the build again after lunch", None, None),
    ("user", "Der Test schlägt immer noch fehl", None, None),
    ("user", "If the login works, we can close the ticket", None, None),
    ("user", "Nobody could log in this morning", None, None),
    ("user", "The tests were passing until yesterday", None, None),
    ("user", "I looked at the deploy logs", None, None),
    ("user", "thx, worked", None, None),
    ("user", "it always builds slowly on Mondays", None, None),
    ("user", "Never understood why the tests need Docker", None, None),
    ("user", "Always the login that times out", None, None),
    ("assistant", "Once the deployment succeeds, you'll see the new version.", None, None),
    ("assistant", "You could try `ssh -v db01` to see where it fails.", None, None),
    ("assistant", "A passing test suite doesn't guarantee a working deploy.", None, None),
    ("user", "Please always reply in English", None, None),
    ("user", "hey, quick question about the build", None, None),
]

HELD_OUT_FROM = next(
    i
    for i, row in enumerate(LABELLED)
    if row[1] == "Heads up: the blyck deployment to staging went through"
)

TYPICAL_TURN = (
    "Quick update: I just deployed blyck to S3 with `aws s3 cp`, it worked. "
    "Next I want to look at the cache headers.\n"
    "Also, never touch PROD without asking me first.",
    "Great news! Here is what I would check next:\n\n"
    "- The bucket policy allows public reads.\n"
    "- The CloudFront distribution points at the new objects.\n\n"
    "```bash\naws cloudfront create-invalidation --distribution-id ABC --paths '/*'\n```\n\n"
    "> it worked\n\n"
    "You can set `Cache-Control` with `--cache-control max-age=300` on the copy. "
    "If the build passes in CI, the deploy job runs on its own.",
)

# A long reply (~11 KB): one event sentence 200 times, for the one-proposal-per-key test
# and the bench's long-reply latency.
LONG_REPLY = "The bucket policy allows public reads. The build passed. " * 200


Prediction = tuple[str | None, str | None]


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    def line(self) -> str:
        return (
            f"precision {self.precision:.3f}  recall {self.recall:.3f}  "
            f"(tp {self.tp}  fp {self.fp}  fn {self.fn}  tn {self.tn})"
        )


def predict(speaker: str, sentence: str) -> Prediction:
    proposal = classify_sentence(
        sentence, speaker="assistant" if speaker == "assistant" else "user"
    )
    return (proposal.type, proposal.key) if proposal else (None, None)


def score(rows: list[Row], predictions: list[Prediction], *, exact: bool = True) -> Score:
    """Confusion counts. `exact`: a proposal must have the expected type and key (a wrong one
    is a false positive and a false negative); otherwise any proposal for an expected one
    counts (event detection alone)."""
    counts = Score()
    for (_, _, want_type, want_key), got in zip(rows, predictions, strict=True):
        if want_type is None and got[0] is None:
            counts.tn += 1
        elif want_type is None:
            counts.fp += 1
        elif got[0] is None:
            counts.fn += 1
        elif not exact or got == (want_type, want_key):
            counts.tp += 1
        else:
            counts.fp += 1
            counts.fn += 1
    return counts
