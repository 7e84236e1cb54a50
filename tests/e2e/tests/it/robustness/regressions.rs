//! Bugs the hunt found, each kept as a test in a module named after its cause.

mod fifo_store_open_hang;
mod fifo_write_blocked;
mod huge_change_group_diff_hang;
