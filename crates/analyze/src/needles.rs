//! Which of many needles occur in a line, in one pass: a small Aho–Corasick automaton.
//!
//! The line scan ([`super::signals::scan`]) asks for ~450 literal needles at once. Natively that
//! is the `aho-corasick` crate (prefilters, a DFA); on wasm32 its code — three automaton kinds
//! behind one dispatch, their builders and searches, ~78 KB of the site's wasm — costs more than
//! the scan needs, so there it is this: a trie with failure links, edges sorted per node, a dense
//! table at the root (most bytes of a line start no needle), and each node's needle list closed
//! over its failure chain. The tests check it against `aho-corasick` on the real table.

/// The automaton. Node 0 is the root.
#[derive(Debug)]
pub struct Needles {
    /// Where each byte leads from the root (0: stays there).
    root: Box<[u32; 256]>,
    /// Per node: its edges (`edges[from..to]`, sorted by byte), failure link and needles
    /// (`found[from..to]`).
    nodes: Vec<Node>,
    edges: Vec<(u8, u32)>,
    found: Vec<u32>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Node {
    edges: (u32, u32),
    fail: u32,
    found: (u32, u32),
}

impl Needles {
    /// The automaton of `needles` (none empty); matches report indexes into `needles`.
    pub fn new(needles: &[&str]) -> Needles {
        // The trie, with per-node child lists while it grows.
        let mut children: Vec<Vec<(u8, u32)>> = vec![Vec::new()];
        let mut own: Vec<Vec<u32>> = vec![Vec::new()];
        for (i, n) in needles.iter().enumerate() {
            let mut s = 0usize;
            for &b in n.as_bytes() {
                s = match children[s].iter().find(|e| e.0 == b) {
                    Some(e) => e.1 as usize,
                    None => {
                        let t = children.len();
                        children[s].push((b, t as u32));
                        children.push(Vec::new());
                        own.push(Vec::new());
                        t
                    }
                };
            }
            own[s].push(i as u32);
        }
        for c in &mut children {
            triage_base::sort::sort_by_key(c, |e| e.0);
        }
        let count = children.len();
        let mut root = Box::new([0u32; 256]);
        for &(b, t) in &children[0] {
            root[b as usize] = t;
        }
        // Failure links breadth first, so a node's failure (shallower) is done before it; each
        // node's needles are its own and its failure's.
        let mut fail = vec![0u32; count];
        let mut all: Vec<Vec<u32>> = vec![Vec::new(); count];
        let mut queue: std::collections::VecDeque<usize> = children[0].iter().map(|e| e.1 as usize).collect();
        for &t in &queue {
            all[t] = own[t].clone();
        }
        while let Some(s) = queue.pop_front() {
            for &(b, t) in &children[s] {
                let t = t as usize;
                let mut f = fail[s] as usize;
                let to = loop {
                    if let Some(e) = children[f].iter().find(|e| e.0 == b) {
                        break e.1;
                    }
                    if f == 0 {
                        break 0;
                    }
                    f = fail[f] as usize;
                };
                fail[t] = to;
                let mut found = own[t].clone();
                found.extend_from_slice(&all[to as usize]);
                all[t] = found;
                queue.push_back(t);
            }
        }
        let (mut nodes, mut edges, mut found) = (Vec::with_capacity(count), Vec::new(), Vec::new());
        for s in 0..count {
            let (e0, f0) = (edges.len() as u32, found.len() as u32);
            edges.extend_from_slice(&children[s]);
            found.extend_from_slice(&all[s]);
            nodes.push(Node {
                edges: (e0, edges.len() as u32),
                fail: fail[s],
                found: (f0, found.len() as u32),
            });
        }
        Needles { root, nodes, edges, found }
    }

    fn child(&self, s: u32, b: u8) -> Option<u32> {
        if s == 0 {
            return Some(self.root[b as usize]);
        }
        let (from, to) = self.nodes[s as usize].edges;
        let edges = &self.edges[from as usize..to as usize];
        edges.binary_search_by_key(&b, |e| e.0).ok().map(|i| edges[i].1)
    }

    /// The state after reading `b` in state `s`.
    fn step(&self, mut s: u32, b: u8) -> u32 {
        loop {
            if let Some(t) = self.child(s, b) {
                return t;
            }
            s = self.nodes[s as usize].fail;
        }
    }

    /// The needles that end where state `s` is reached.
    fn found_at(&self, s: u32) -> &[u32] {
        let (from, to) = self.nodes[s as usize].found;
        &self.found[from as usize..to as usize]
    }

    /// Call `f` with the index of each needle at each place it ends in `hay` (overlapping
    /// matches included, as `aho-corasick`'s `find_overlapping_iter`).
    pub fn each_in(&self, hay: &[u8], mut f: impl FnMut(usize)) {
        let mut s = 0u32;
        for &b in hay {
            s = self.step(s, b);
            for &i in self.found_at(s) {
                f(i as usize);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// (needle, end) of every match, sorted: what both automata must agree on.
    fn ours(n: &Needles, hay: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut s = 0u32;
        // `each_in`'s walk, with each match's end as well.
        for (at, &b) in hay.as_bytes().iter().enumerate() {
            s = n.step(s, b);
            out.extend(n.found_at(s).iter().map(|&i| (i as usize, at + 1)));
        }
        out.sort_unstable();
        out
    }

    fn theirs(needles: &[&str], hay: &str) -> Vec<(usize, usize)> {
        let ac = aho_corasick::AhoCorasick::new(needles).expect("builds");
        let mut out: Vec<(usize, usize)> =
            ac.find_overlapping_iter(hay).map(|m| (m.pattern().as_usize(), m.end())).collect();
        out.sort_unstable();
        out
    }

    #[test]
    fn finds_overlapping_and_nested_needles() {
        let needles = ["he", "she", "his", "hers", "s"];
        let n = Needles::new(&needles);
        let hay = "ushers and his shells";
        assert_eq!(ours(&n, hay), theirs(&needles, hay));
        let mut seen = Vec::new();
        n.each_in(hay.as_bytes(), |i| seen.push(i));
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, [0, 1, 2, 3, 4]);
        let mut none = Vec::new();
        n.each_in(b"xyz", |i| none.push(i));
        assert!(none.is_empty());
    }

    proptest! {
        #[test]
        fn agrees_with_aho_corasick(
            needles in proptest::collection::vec("[abc]{1,4}", 1..12),
            hay in "[abcd]{0,60}",
        ) {
            let refs: Vec<&str> = needles.iter().map(String::as_str).collect();
            let n = Needles::new(&refs);
            prop_assert_eq!(ours(&n, &hay), theirs(&refs, &hay));
        }
    }
}
