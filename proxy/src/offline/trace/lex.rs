//! Shell-like tokenizer for iptables-save / iptables-restore lines.

/// One word of a rule line. `quoted` tells values like `"-> 10.0.0.1:80"` apart from options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) text: String,
    pub(crate) quoted: bool,
}

impl Token {
    /// An unquoted word that starts an option (`-d`, `--dport`).
    pub(crate) fn is_option(&self) -> bool {
        !self.quoted && self.text.len() > 1 && self.text.starts_with('-')
    }

    /// An unquoted `!`.
    pub(crate) fn is_bang(&self) -> bool {
        !self.quoted && self.text == "!"
    }
}

/// Splits on whitespace; double quotes group (with `\"` and `\\` escapes inside), single
/// quotes group literally, a backslash outside quotes escapes the next character.
pub(crate) fn tokenize(line: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut in_token = false;
    let mut quoted = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                in_token = true;
                quoted = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\')) => current.push(e),
                            Some(other) => {
                                current.push('\\');
                                current.push(other);
                            }
                            None => return Err("unterminated double quote".to_string()),
                        },
                        Some(other) => current.push(other),
                        None => return Err("unterminated double quote".to_string()),
                    }
                }
            }
            '\'' => {
                in_token = true;
                quoted = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(other) => current.push(other),
                        None => return Err("unterminated single quote".to_string()),
                    }
                }
            }
            '\\' => {
                in_token = true;
                match chars.next() {
                    Some(e) => current.push(e),
                    None => return Err("line ends with a backslash".to_string()),
                }
            }
            c if c.is_whitespace() => {
                if in_token {
                    tokens.push(Token {
                        text: std::mem::take(&mut current),
                        quoted,
                    });
                    in_token = false;
                    quoted = false;
                }
            }
            other => {
                in_token = true;
                current.push(other);
            }
        }
    }
    if in_token {
        tokens.push(Token {
            text: current,
            quoted,
        });
    }
    Ok(tokens)
}
