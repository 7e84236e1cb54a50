//! The background jobs of one session, kept in the session's state: numbered from 1, within
//! the session's limits (`[bash] jobs_max`, `jobs_buffer_bytes`), and all killed when the
//! session ends.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::task::JoinHandle;
use vak_tool_core::human;

use super::job::Job;
use crate::settings::BashSettings;

/// Ended jobs whose end has been shown are still listed, the newest this many.
const HISTORY: usize = 32;

/// A session's jobs. Dropping it (the session's last handle went) kills every job's tree at
/// once and ends its task.
#[derive(Default)]
pub(crate) struct JobTable {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The last number given.
    last_id: u32,
    jobs: Vec<Entry>,
    /// Starts under way: their numbers and the bytes they reserved.
    starting: Vec<(u32, usize)>,
}

struct Entry {
    job: Arc<Job>,
    task: JoinHandle<()>,
}

/// Room for one job being started; given back if the start fails.
pub(crate) struct Reservation<'a> {
    table: &'a JobTable,
    /// The job's number.
    pub(crate) id: u32,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.table.lock().starting.retain(|(id, _)| *id != self.id);
    }
}

impl JobTable {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Room for one more job of `settings`, with a terminal or not; `Err` says which limit
    /// stands in the way and what to do.
    pub(crate) fn reserve(
        &self,
        settings: &BashSettings,
        tty: bool,
    ) -> Result<Reservation<'_>, String> {
        let mut inner = self.lock();
        inner.forget_old();
        let running =
            inner.jobs.iter().filter(|entry| !entry.job.ended()).count() + inner.starting.len();
        if running >= settings.jobs_max {
            return Err(format!(
                "this session already runs {}, the most `[bash] jobs_max` allows. Stop one \
                 first with jobs {{\"action\": \"stop\", \"job_id\": N}}; jobs {{\"action\": \
                 \"list\"}} shows them",
                human::count(running as u64, "background job", "background jobs")
            ));
        }
        let needed = settings
            .job_stream_bytes
            .saturating_mul(if tty { 1 } else { 2 });
        let held: usize = inner
            .jobs
            .iter()
            .filter(|entry| entry.job.holds_reservation())
            .map(|entry| entry.job.reserved)
            .chain(inner.starting.iter().map(|(_, bytes)| *bytes))
            .sum();
        if held.saturating_add(needed) > settings.jobs_buffer_bytes {
            return Err(format!(
                "the background jobs of this session already hold {} of room for unread output, \
                 and this job needs {} more: past the session's {} (`[bash] jobs_buffer_bytes`). \
                 A job gives its room back once a result has shown its end: read the jobs that \
                 ended, or stop one (jobs {{\"action\": \"list\"}} shows them)",
                human::size(held as u64),
                human::size(needed as u64),
                human::size(settings.jobs_buffer_bytes as u64)
            ));
        }
        inner.last_id += 1;
        let id = inner.last_id;
        inner.starting.push((id, needed));
        Ok(Reservation { table: self, id })
    }

    /// Adds a started job, whose task is `task`, in place of its reservation.
    pub(crate) fn insert(&self, reservation: Reservation<'_>, job: Arc<Job>, task: JoinHandle<()>) {
        // Listed before the reservation goes, so that the limits never miss it.
        self.lock().jobs.push(Entry { job, task });
        drop(reservation);
    }

    /// The job numbered `id`; `Err` names the jobs there are.
    pub(crate) fn get(&self, id: u32) -> Result<Arc<Job>, String> {
        let inner = self.lock();
        if let Some(entry) = inner.jobs.iter().find(|entry| entry.job.id == id) {
            return Ok(Arc::clone(&entry.job));
        }
        let known: Vec<String> = inner
            .jobs
            .iter()
            .map(|entry| entry.job.id.to_string())
            .collect();
        Err(if known.is_empty() {
            format!(
                "there is no job {id}: this session has no background job. Start one with \
                 bash {{\"command\": …, \"run_in_background\": true}}"
            )
        } else {
            format!(
                "there is no job {id} in this session; its jobs are {}",
                known.join(", ")
            )
        })
    }

    /// Every job, oldest first.
    pub(crate) fn list(&self) -> Vec<Arc<Job>> {
        let mut inner = self.lock();
        inner.forget_old();
        inner
            .jobs
            .iter()
            .map(|entry| Arc::clone(&entry.job))
            .collect()
    }
}

impl Inner {
    /// Forgets the oldest ended jobs whose end was shown, past [`HISTORY`].
    fn forget_old(&mut self) {
        let done = self
            .jobs
            .iter()
            .filter(|entry| entry.job.ended() && !entry.job.holds_reservation())
            .count();
        let mut excess = done.saturating_sub(HISTORY);
        self.jobs.retain(|entry| {
            if excess > 0 && entry.job.ended() && !entry.job.holds_reservation() {
                excess -= 1;
                false
            } else {
                true
            }
        });
    }
}

impl Drop for JobTable {
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(PoisonError::into_inner);
        for entry in inner.jobs.drain(..) {
            // At once and synchronously: the process may be about to exit.
            entry.job.tree.kill_now();
            entry.job.stop.cancel();
            entry.job.close_input();
            entry.task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process_tree::Published;

    fn settings(jobs_max: usize, buffer: usize) -> BashSettings {
        BashSettings {
            jobs_max,
            job_stream_bytes: 100,
            jobs_buffer_bytes: buffer,
            ..BashSettings::default()
        }
    }

    fn add(table: &JobTable, settings: &BashSettings, tty: bool) -> Result<Arc<Job>, String> {
        let reservation = table.reserve(settings, tty)?;
        let job = Arc::new(Job::new(
            reservation.id,
            "true".into(),
            tty,
            settings.job_stream_bytes,
            Published::default(),
            None,
        ));
        table.insert(reservation, Arc::clone(&job), tokio::spawn(async {}));
        Ok(job)
    }

    #[tokio::test]
    async fn the_count_limit_counts_running_jobs_and_starts() {
        let table = JobTable::default();
        let settings = settings(2, 10_000);
        let first = add(&table, &settings, false).unwrap();
        let starting = table.reserve(&settings, false).unwrap();
        assert_eq!((first.id, starting.id), (1, 2));
        let error = table.reserve(&settings, false).err().unwrap();
        assert!(error.contains("already runs 2 background jobs"), "{error}");
        assert!(error.contains("jobs_max"), "{error}");
        // A failed start gives its place back; an ended job leaves one.
        drop(starting);
        assert!(table.reserve(&settings, false).is_ok());
        first.finish(super::super::job::End {
            text: String::new(),
            is_error: false,
            summary: "exited with code 0".into(),
            summary_says_duration: false,
            at: tokio::time::Instant::now(),
        });
        add(&table, &settings, false).unwrap();
        add(&table, &settings, false).unwrap();
        assert_eq!(
            table.list().iter().map(|job| job.id).collect::<Vec<_>>(),
            [1, 4, 5]
        );
    }

    #[tokio::test]
    async fn the_byte_budget_counts_reservations_until_the_end_is_shown() {
        let table = JobTable::default();
        let settings = settings(10, 400);
        let pipes = add(&table, &settings, false).unwrap(); // 200
        add(&table, &settings, true).unwrap(); // 100
        let error = table.reserve(&settings, false).err().unwrap();
        assert!(error.contains("already hold 300 B"), "{error}");
        assert!(error.contains("needs 200 B more"), "{error}");
        assert!(error.contains("jobs_buffer_bytes"), "{error}");
        // A terminal job needs one stream's room only.
        assert!(table.reserve(&settings, true).is_ok());
        pipes.finish(super::super::job::End {
            text: String::new(),
            is_error: false,
            summary: "exited with code 0".into(),
            summary_says_duration: false,
            at: tokio::time::Instant::now(),
        });
        assert!(
            table.reserve(&settings, false).is_err(),
            "the end is not shown yet"
        );
        let _ = pipes.report();
        assert!(table.reserve(&settings, false).is_ok());
    }

    #[tokio::test]
    async fn unknown_jobs_are_named() {
        let table = JobTable::default();
        let error = table.get(3).err().unwrap();
        assert!(error.contains("no background job"), "{error}");
        let settings = settings(10, 10_000);
        add(&table, &settings, false).unwrap();
        let error = table.get(3).err().unwrap();
        assert!(error.contains("its jobs are 1"), "{error}");
    }
}
