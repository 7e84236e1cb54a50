//! Empty: this package only names the crates whose sources make the benchmark corpus.
