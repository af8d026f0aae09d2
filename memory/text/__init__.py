"""The language toolkit memory/ shares: Markdown structure (code fences, quotes, list markers),
sentence splitting, word lists with their cue words (negations, conditions), and the door to
the word-level tools `store.text_terms` keeps for the lexical index (stopwords, stemming,
language detection), so memory/ modules take all of it from one place."""
