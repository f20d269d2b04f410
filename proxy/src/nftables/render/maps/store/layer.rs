//! One set's packed elements, held as a sorted run with a small overlay of recent changes.

use std::collections::BTreeMap;

/// One set's elements: a sorted run of packed (key, entry) pairs, 27 bytes each for IPv4, and a
/// small sorted overlay of the keys added since the run was last rebuilt (and of the run's keys
/// removed since, as `None`). A `BTreeMap` of the same pairs costs ~68 bytes per element
/// (docs/nftables-maps.md, "Measured: the daemon with sorted packed runs"); the overlay keeps a
/// change's insert O(log n) and is folded into the run once it holds a sixteenth of it.
#[derive(Clone, Debug)]
pub(super) struct Layer<const K: usize, const E: usize> {
    run: Vec<([u8; K], [u8; E])>,
    overlay: BTreeMap<[u8; K], Option<[u8; E]>>,
    live: usize,
}

/// The overlay's size that folds it into the run, at least (small in unit tests, so that their
/// few operations fold it too).
const MIN_OVERLAY: usize = if cfg!(test) { 2 } else { 64 };

impl<const K: usize, const E: usize> Default for Layer<K, E> {
    fn default() -> Self {
        Layer {
            run: Vec::new(),
            overlay: BTreeMap::new(),
            live: 0,
        }
    }
}

impl<const K: usize, const E: usize> Layer<K, E> {
    fn find(&self, k: &[u8; K]) -> Result<usize, usize> {
        self.run.binary_search_by(|(rk, _)| rk.cmp(k))
    }

    pub(super) fn get(&self, k: &[u8; K]) -> Option<&[u8; E]> {
        match self.overlay.get(k) {
            Some(e) => e.as_ref(),
            None => self.find(k).ok().map(|i| &self.run[i].1),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// True when the key is new.
    pub(super) fn insert(&mut self, k: [u8; K], e: [u8; E]) -> bool {
        let new = match self.find(&k) {
            Ok(i) => {
                self.run[i].1 = e;
                self.overlay.remove(&k).is_some()
            }
            Err(_) => self.overlay.insert(k, Some(e)).is_none(),
        };
        self.live += usize::from(new);
        self.fold_if_large();
        new
    }

    /// True when the key was there.
    pub(super) fn remove(&mut self, k: &[u8; K]) -> bool {
        let was = match self.find(k) {
            Ok(_) => self.overlay.insert(*k, None).is_none(),
            Err(_) => self.overlay.remove(k).is_some(),
        };
        self.live -= usize::from(was);
        self.fold_if_large();
        was
    }

    fn fold_if_large(&mut self) {
        if self.overlay.len() >= MIN_OVERLAY.max(self.run.len() / 16) {
            self.fold();
        }
    }

    /// Folds the overlay into the run in place: the removed keys leave, then the added ones are
    /// merged in from the back, so the run's buffer grows (by `realloc`) and is never copied
    /// whole beside itself.
    fn fold(&mut self) {
        let overlay = std::mem::take(&mut self.overlay);
        let mut added = Vec::with_capacity(overlay.len());
        let mut removed = Vec::new();
        for (k, e) in overlay {
            match e {
                Some(e) => added.push((k, e)),
                None => removed.push(k),
            }
        }
        if !removed.is_empty() {
            let mut gone = removed.iter().peekable();
            self.run.retain(|(k, _)| {
                while gone.next_if(|g| *g < k).is_some() {}
                gone.next_if(|g| *g == k).is_none()
            });
        }
        let (mut i, mut j) = (self.run.len(), added.len());
        self.run.reserve(j);
        self.run.resize(i + j, ([0; K], [0; E]));
        let mut w = i + j;
        while j > 0 {
            w -= 1;
            if i > 0 && self.run[i - 1].0 > added[j - 1].0 {
                self.run[w] = self.run[i - 1];
                i -= 1;
            } else {
                self.run[w] = added[j - 1];
                j -= 1;
            }
        }
    }

    /// Every element in key order: the run's (but those removed) merged with the overlay's.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let mut run = self.run.iter().peekable();
        let mut overlay = self.overlay.iter().peekable();
        std::iter::from_fn(move || {
            loop {
                let take_run = match (run.peek(), overlay.peek()) {
                    (None, None) => return None,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                    (Some((rk, _)), Some((ok, _))) => rk < *ok,
                };
                if take_run {
                    let (k, e) = run.next()?;
                    return Some((&k[..], &e[..]));
                }
                let (k, e) = overlay.next()?;
                // An overlay key is either new (not in the run) or the run's, removed.
                if run.peek().is_some_and(|(rk, _)| rk == k) {
                    run.next();
                }
                if let Some(e) = e {
                    return Some((&k[..], &e[..]));
                }
            }
        })
    }

    pub(super) fn widen<const WK: usize, const WE: usize>(self) -> Layer<WK, WE> {
        Layer {
            run: self.run.into_iter().map(|(k, e)| (widen(k), widen(e))).collect(),
            overlay: self
                .overlay
                .into_iter()
                .map(|(k, e)| (widen(k), e.map(widen)))
                .collect(),
            live: self.live,
        }
    }
}

fn widen<const N: usize, const W: usize>(b: [u8; N]) -> [u8; W] {
    let mut out = [0; W];
    out[..N].copy_from_slice(&b);
    out
}
