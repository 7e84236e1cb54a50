//! The window of a whole tool result that a model is shown (not built yet: see the vak-window
//! issue). No async, no I/O.
#![forbid(unsafe_code)]
