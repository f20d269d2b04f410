//! The JSONPath subset CRD printer columns use: `.a.b`, `[N]`, `[*]`, `[?(@.k=="v")]`.

use serde_json::Value;

#[derive(Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
    Filter(Vec<String>, String),
}

fn parse(path: &str) -> Option<Vec<Step>> {
    let p = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut steps = Vec::new();
    let mut rest = p;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end > 0 {
                steps.push(Step::Field(r[..end].to_string()));
            }
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            rest = &r[end + 1..];
            if inner == "*" {
                steps.push(Step::All);
            } else if let Some(f) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (lhs, rhs) = f.split_once("==")?;
                let want = rhs.trim().trim_matches(|c| c == '"' || c == '\'').to_string();
                steps.push(Step::Filter(
                    lhs.trim().split('.').map(String::from).collect(),
                    want,
                ));
            } else {
                steps.push(Step::Index(inner.trim().parse().ok()?));
            }
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            steps.push(Step::Field(rest[..end].to_string()));
            rest = &rest[end..];
        }
    }
    Some(steps)
}

/// All values the path selects.
pub fn eval<'a>(obj: &'a Value, path: &str) -> Vec<&'a Value> {
    let Some(steps) = parse(path) else {
        return Vec::new();
    };
    let mut cur = vec![obj];
    for s in &steps {
        let mut next = Vec::new();
        for v in cur {
            match s {
                Step::Field(f) => next.extend(v.get(f)),
                Step::Index(i) => next.extend(v.get(*i)),
                Step::All => next.extend(v.as_array().into_iter().flatten()),
                Step::Filter(lhs, want) => next.extend(v.as_array().into_iter().flatten().filter(|item| {
                    let got = lhs.iter().try_fold(*item, |c, seg| c.get(seg));
                    match got {
                        Some(Value::String(s)) => s == want,
                        Some(other) => {
                            *other == Value::String(want.clone())
                                || other.to_string().as_str() == want.as_str()
                        }
                        None => false,
                    }
                })),
            }
        }
        cur = next;
    }
    cur
}

#[cfg(test)]
mod tests;
