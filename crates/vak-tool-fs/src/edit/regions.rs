//! Where the running text differs from the original, kept as a short list of regions through
//! any number of edits, so that the changed lines and the diff cost the size of the change, not
//! of the file.

use super::line_numbers::LineCounter;

/// One changed region: `orig` in the original text stands where `now` stands in the running text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Region {
    /// Byte range in the original text.
    pub(crate) orig: (usize, usize),
    /// Byte range in the running text.
    pub(crate) now: (usize, usize),
}

/// The changed regions, sorted and disjoint.
#[derive(Debug, Default)]
pub(crate) struct Regions(Vec<Region>);

impl Regions {
    /// Records splices made to the running text: each `(start, end, new_len)` replaced
    /// `start..end` of the text before them by `new_len` bytes. They are sorted and disjoint.
    pub(crate) fn record(&mut self, splices: &[(usize, usize, usize)]) {
        enum Item {
            Old(Region),
            Splice(usize, usize, usize),
        }
        let mut items: Vec<(usize, usize, Item)> = self
            .0
            .iter()
            .map(|r| (r.now.0, r.now.1, Item::Old(*r)))
            .chain(
                splices
                    .iter()
                    .map(|&(s, e, n)| (s, e, Item::Splice(s, e, n))),
            )
            .collect();
        items.sort_by_key(|item| item.0);
        let mut out: Vec<Region> = Vec::new();
        // Sum of (now length - orig length) of the old regions passed so far.
        let mut delta_old: isize = 0;
        // Sum of (new length - old length) of the splices passed so far.
        let mut shift: isize = 0;
        let mut i = 0;
        while i < items.len() {
            let cluster_start = items[i].0;
            let mut cluster_end = items[i].1;
            let delta_before = delta_old;
            let shift_before = shift;
            while i < items.len() && items[i].0 <= cluster_end {
                cluster_end = cluster_end.max(items[i].1);
                match items[i].2 {
                    Item::Old(r) => {
                        delta_old += (r.now.1 - r.now.0) as isize - (r.orig.1 - r.orig.0) as isize;
                    }
                    Item::Splice(s, e, n) => shift += n as isize - (e - s) as isize,
                }
                i += 1;
            }
            out.push(Region {
                orig: (
                    offset(cluster_start, -delta_before),
                    offset(cluster_end, -delta_old),
                ),
                now: (
                    offset(cluster_start, shift_before),
                    offset(cluster_end, shift),
                ),
            });
        }
        self.0 = out;
    }

    /// The regions whose text really differs between `original` and `now`.
    pub(crate) fn changed(&self, original: &str, now: &str) -> Vec<Region> {
        self.0
            .iter()
            .filter(|r| original.get(r.orig.0..r.orig.1) != now.get(r.now.0..r.now.1))
            .copied()
            .collect()
    }
}

fn offset(position: usize, by: isize) -> usize {
    position.saturating_add_signed(by)
}

/// The line ranges of the new text that the regions cover, as `12-14, 30`; a region that only
/// deleted is named by the line it left off at.
pub(crate) fn changed_lines(regions: &[Region], now: &str) -> Vec<(usize, usize)> {
    let mut counter = LineCounter::new(now);
    let mut out: Vec<(usize, usize)> = Vec::new();
    for region in regions {
        let (first, last) = counter.span(region.now.0, region.now.1);
        match out.last_mut() {
            Some(previous) if previous.1 + 1 >= first => previous.1 = previous.1.max(last),
            _ => out.push((first, last)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies splices to a text and records them, as the edit engine does.
    fn splice(text: &str, regions: &mut Regions, splices: &[(usize, usize, &str)]) -> String {
        let mut out = String::new();
        let mut at = 0;
        for &(s, e, new) in splices {
            out.push_str(&text[at..s]);
            out.push_str(new);
            at = e;
        }
        out.push_str(&text[at..]);
        let record: Vec<_> = splices
            .iter()
            .map(|&(s, e, new)| (s, e, new.len()))
            .collect();
        regions.record(&record);
        out
    }

    #[test]
    fn regions_follow_sequential_edits() {
        let original = "0123456789";
        let mut regions = Regions::default();
        let a = splice(original, &mut regions, &[(2, 4, "abcd")]); // 01abcd456789
        assert_eq!(a, "01abcd456789");
        let b = splice(&a, &mut regions, &[(8, 9, ""), (11, 12, "XY")]);
        assert_eq!(b, "01abcd4578XY");
        let c = splice(&b, &mut regions, &[(3, 7, "-")]); // touches the first region
        assert_eq!(c, "01a-578XY");
        for r in &regions.0 {
            // Outside the regions both texts agree; inside, the mapping is consistent.
            assert!(r.orig.0 <= r.orig.1 && r.now.0 <= r.now.1);
        }
        let orig_gaps: Vec<_> = gaps(original, regions.0.iter().map(|r| r.orig));
        let now_gaps: Vec<_> = gaps(&c, regions.0.iter().map(|r| r.now));
        assert_eq!(orig_gaps, now_gaps);
    }

    fn gaps(text: &str, ranges: impl Iterator<Item = (usize, usize)>) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = 0;
        for (s, e) in ranges {
            out.push(text[at..s].to_owned());
            at = e;
        }
        out.push(text[at..].to_owned());
        out
    }
}
