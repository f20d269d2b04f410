//! A small unified-style line diff (longest common subsequence, 3 lines of context) for test failures.

/// `--- a` / `+++ b` and `@@` hunks; empty when the texts are equal.
pub fn unified(a_name: &str, a: &str, b_name: &str, b: &str) -> String {
    if a == b {
        return String::new();
    }
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    let ops = edit_script(&a, &b);
    let mut out = format!("--- {a_name}\n+++ {b_name}\n");
    let changed: Vec<usize> = (0..ops.len())
        .filter(|&i| !matches!(ops[i], Op::Same(..)))
        .collect();
    let mut i = 0;
    while i < changed.len() {
        // Group changes closer than 2 * context into one hunk.
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = changed[i];
        while i < changed.len() && changed[i] <= end + 2 * CONTEXT {
            end = changed[i];
            i += 1;
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let (a0, b0) = position(&ops[..start]);
        let (an, bn) = position(&ops[start..end]);
        out.push_str(&format!("@@ -{},{an} +{},{bn} @@\n", a0 + 1, b0 + 1));
        for op in &ops[start..end] {
            match op {
                Op::Same(l) => out.push_str(&format!(" {l}\n")),
                Op::Del(l) => out.push_str(&format!("-{l}\n")),
                Op::Add(l) => out.push_str(&format!("+{l}\n")),
            }
        }
    }
    out
}

const CONTEXT: usize = 3;

enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

/// Lines of a and b consumed by these operations.
fn position(ops: &[Op<'_>]) -> (usize, usize) {
    ops.iter().fold((0, 0), |(x, y), op| match op {
        Op::Same(_) => (x + 1, y + 1),
        Op::Del(_) => (x + 1, y),
        Op::Add(_) => (x, y + 1),
    })
}

/// Deletions before additions at each difference, from an LCS table (rulesets are small).
fn edit_script<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut ops) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push(Op::Same(a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(Op::Del(a[i]));
            i += 1;
        } else {
            ops.push(Op::Add(b[j]));
            j += 1;
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::unified;

    #[test]
    fn marks_changed_lines() {
        let d = unified("a", "x\ny\nz\n", "b", "x\nY\nz\n");
        assert_eq!(d, "--- a\n+++ b\n@@ -1,3 +1,3 @@\n x\n-y\n+Y\n z\n");
        assert!(unified("a", "same\n", "b", "same\n").is_empty());
    }
}
