"""Names the success classifier knows in every language: tools, test runners, database
engines (and the engine each command stands for) and the events' keywords that are names."""

BUILD_TOOLS = """
npm pnpm yarn bun cargo go gradle gradlew mvn maven make cmake ninja bazel docker podman
uv pip poetry hatch tsc webpack vite esbuild rollup dotnet msbuild xcodebuild swift mix
sbt meson nix python gcc clang rustc just flit pdm jenkins circleci travis buildkite
drone
"""
TEST_RUNNERS = """
pytest unittest tox nox jest vitest mocha jasmine karma rspec minitest phpunit playwright
cypress ctest bats behave ci jenkins circleci travis buildkite
"""
DEPLOY_TOOLS = """
aws gcloud az kubectl helm terraform ansible vercel netlify flyctl fly heroku wrangler
rsync scp docker podman gh firebase serverless sls pulumi cdk capistrano twine
"""
AUTH_TOOLS = """
gh github gitlab glab aws az azure gcloud google docker podman npm pypi twine vault okta
heroku vercel netlify fly flyctl huggingface hf op bw jfrog artifactory kubectl bitbucket
"""
ENGINES = {
    "psql": "postgres",
    "postgres": "postgres",
    "postgresql": "postgres",
    "pg": "postgres",
    "pgcli": "postgres",
    "mysql": "mysql",
    "mariadb": "mariadb",
    "sqlite": "sqlite",
    "sqlite3": "sqlite",
    "mongo": "mongo",
    "mongosh": "mongo",
    "mongodb": "mongo",
    "redis": "redis",
    "redis-cli": "redis",
    "duckdb": "duckdb",
    "clickhouse": "clickhouse",
}
# Test runners and engines that are event keywords on their own ("pytest is green").
TEST_KEYWORDS = "pytest unittest tox nox jest vitest mocha rspec phpunit playwright cypress ci"
DB_KEYWORDS = """
psql postgres postgresql mysql mariadb sqlite sqlite3 mongo mongodb mongosh redis duckdb
clickhouse
"""
SSH_KEYWORDS = "ssh sshing sshd scp sftp mosh"
# The masking placeholder ``[REDACTED:…]`` becomes this word before a sentence is read.
REDACTED = "redacted"
