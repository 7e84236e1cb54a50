//! The plain text a model reads: compact, one commitment per header line, criteria indented
//! below it. Ages are taken against a `now` the caller passes, so the text is deterministic.

use std::borrow::Cow;
use std::fmt::{self, Write};

use crate::time::Span;
use crate::{Commitment, CommitmentHistory, Criterion, Overview, State, StatusFilter, Timestamp};

/// The text of a listing for `filter`, with ages as of `now`.
///
/// One line of counts, then the commitments: each with its id, title, state detail (why it is
/// blocked; whom it waits on and since when; how and when it closed) and age; below a
/// not-closed one, each criterion, met (`[x]`) or not (`[ ]`, with the evidence it still
/// needs). A store with no commitments at all is one plain sentence.
pub fn render_overview(overview: &Overview, filter: StatusFilter, now: Timestamp) -> String {
    let criteria: usize = overview
        .commitments
        .iter()
        .map(|commitment| commitment.criteria.len())
        .sum();
    let mut out = String::with_capacity(256 + overview.commitments.len() * 160 + criteria * 96);
    // Writing into a String cannot fail.
    let _ = write_overview(&mut out, overview, filter, now);
    out
}

/// The text of one commitment whole: state, dates, every criterion with its evidence or what
/// it still needs, and its history oldest first.
pub fn render_commitment(history: &CommitmentHistory, now: Timestamp) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_history(&mut out, history, now);
    out
}

/// `text` on one line: line breaks become spaces so that they cannot break the layout.
fn line(text: &str) -> Cow<'_, str> {
    if text.contains(['\n', '\r']) {
        Cow::Owned(
            text.split(['\n', '\r'])
                .filter(|part| !part.trim().is_empty())
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" "),
        )
    } else {
        Cow::Borrowed(text)
    }
}

fn ago(now: Timestamp, then: Timestamp) -> Span {
    Span(now.unix_seconds().saturating_sub(then.unix_seconds()))
}

fn write_overview(
    out: &mut String,
    overview: &Overview,
    filter: StatusFilter,
    now: Timestamp,
) -> fmt::Result {
    let counts = &overview.counts;
    if counts.total() == 0 {
        return out.write_str("No commitments: nothing is open, blocked, waiting or closed.\n");
    }
    writeln!(
        out,
        "Commitments: {} open, {} blocked, {} waiting, {} closed.",
        counts.open, counts.blocked, counts.waiting, counts.closed
    )?;
    let (closed, active): (Vec<&Commitment>, Vec<&Commitment>) = overview
        .commitments
        .iter()
        .partition(|commitment| commitment.state.is_closed());
    let none = match filter {
        StatusFilter::Open if counts.active() == 0 => Some("Nothing is open, blocked or waiting."),
        StatusFilter::Blocked if counts.blocked == 0 => Some("None is blocked."),
        StatusFilter::Waiting if counts.waiting == 0 => Some("None is waiting on a person."),
        StatusFilter::Closed if counts.closed == 0 => Some("None is closed yet."),
        _ => None,
    };
    if let Some(none) = none {
        writeln!(out, "{none}")?;
    }
    if !active.is_empty() {
        let heading = match filter {
            StatusFilter::Blocked => "Blocked, oldest first:",
            StatusFilter::Waiting => "Waiting on a person, oldest first:",
            _ => "Not closed, oldest first:",
        };
        writeln!(out, "\n{heading}")?;
        for commitment in &active {
            write_active(out, commitment, now)?;
        }
    }
    let mut notes = Vec::new();
    if !closed.is_empty() {
        writeln!(out, "\nClosed, most recent first:")?;
        for commitment in &closed {
            write_closed(out, commitment, now)?;
        }
    }
    let left_out = counts.closed.saturating_sub(closed.len());
    if matches!(filter, StatusFilter::Closed | StatusFilter::All) && left_out > 0 {
        notes.push(format!(
            "Showing the {} most recently closed of {}; the {left_out} older ones are left out \
             (status \"all\" lists every one).",
            closed.len(),
            counts.closed
        ));
    }
    if filter == StatusFilter::Open && counts.closed > 0 {
        notes.push(format!(
            "{} closed: status \"closed\" shows how they closed.",
            counts.closed
        ));
    }
    if !overview.commitments.is_empty() {
        notes.push("`id` shows one commitment whole: criteria, evidence, history.".to_owned());
    }
    if !notes.is_empty() {
        out.write_char('\n')?;
        for note in notes {
            writeln!(out, "{note}")?;
        }
    }
    Ok(())
}

/// `2/5 criteria met`, or that there are none.
struct CriteriaSummary<'c>(&'c Commitment);

impl fmt::Display for CriteriaSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.criteria.len() {
            0 if self.0.state.is_closed() => f.write_str("no criteria"),
            0 => f.write_str("no criteria yet"),
            all => write!(f, "{}/{all} criteria met", self.0.met()),
        }
    }
}

fn write_state(out: &mut String, state: &State, now: Timestamp) -> fmt::Result {
    match state {
        State::Open => out.write_str("open"),
        State::Blocked { why } => write!(out, "blocked: {}", line(why)),
        State::Waiting { on, since } => write!(
            out,
            "waiting on {} since {since} (for {})",
            line(on),
            ago(now, *since)
        ),
        State::Closed { at, how, note } => {
            write!(out, "closed as {how} {at} ({} ago)", ago(now, *at))?;
            match note {
                Some(note) => write!(out, ": {}", line(note)),
                None => Ok(()),
            }
        }
    }
}

fn write_active(out: &mut String, commitment: &Commitment, now: Timestamp) -> fmt::Result {
    write!(out, "{} {} · ", commitment.id, line(&commitment.title))?;
    write_state(out, &commitment.state, now)?;
    writeln!(
        out,
        " · {} old · {}",
        ago(now, commitment.opened_at),
        CriteriaSummary(commitment)
    )?;
    for criterion in &commitment.criteria {
        write_criterion_line(out, criterion)?;
        if let (None, Some(needed)) = (&criterion.evidence, &criterion.needed) {
            write!(out, " — needs: {}", line(needed))?;
        }
        out.write_char('\n')?;
    }
    Ok(())
}

fn write_criterion_line(out: &mut String, criterion: &Criterion) -> fmt::Result {
    let mark = if criterion.is_met() { 'x' } else { ' ' };
    write!(
        out,
        "  [{mark}] {}. {}",
        criterion.position,
        line(&criterion.description)
    )
}

fn write_closed(out: &mut String, commitment: &Commitment, now: Timestamp) -> fmt::Result {
    write!(out, "{} {} · ", commitment.id, line(&commitment.title))?;
    write_state(out, &commitment.state, now)?;
    writeln!(out, " · {}", CriteriaSummary(commitment))
}

fn write_history(out: &mut String, history: &CommitmentHistory, now: Timestamp) -> fmt::Result {
    let commitment = &history.commitment;
    writeln!(out, "{} {}", commitment.id, line(&commitment.title))?;
    out.write_str("state: ")?;
    write_state(out, &commitment.state, now)?;
    writeln!(
        out,
        "\nopened {} ({} ago) · last change {} ({} ago)",
        commitment.opened_at,
        ago(now, commitment.opened_at),
        commitment.updated_at,
        ago(now, commitment.updated_at)
    )?;
    if commitment.criteria.is_empty() {
        let yet = if commitment.state.is_closed() {
            ""
        } else {
            " yet"
        };
        writeln!(out, "criteria: none{yet}")?;
    } else {
        writeln!(
            out,
            "criteria: {} of {} met",
            commitment.met(),
            commitment.criteria.len()
        )?;
    }
    for criterion in &commitment.criteria {
        write_criterion_line(out, criterion)?;
        out.write_char('\n')?;
        match (&criterion.evidence, &criterion.needed) {
            (Some(evidence), _) => writeln!(
                out,
                "      evidence ({}): {}",
                evidence.at,
                line(&evidence.text)
            )?,
            (None, Some(needed)) => writeln!(out, "      needs: {}", line(needed))?,
            (None, None) => writeln!(out, "      needs: evidence (not described yet)")?,
        }
    }
    if history.events.is_empty() {
        return writeln!(out, "history: none recorded");
    }
    writeln!(out, "history, oldest first:")?;
    for event in &history.events {
        writeln!(
            out,
            "  {} {}: {}",
            event.at,
            event.kind.as_str(),
            line(&event.detail)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_cannot_break_the_layout() {
        assert_eq!(line("a\r\nb\n\n c "), "a b c");
        assert!(matches!(line("plain"), Cow::Borrowed("plain")));
    }
}
