//! One rule's arguments -> matches + target.

use super::lex::Token;
use super::rules::{DnatTo, MarkOp, Match, MatchKind, Module, Opt, Rule, Target};
use ipnet::IpNet;
use std::net::IpAddr;

/// Match-module options each known module owns, so that an option written after a later
/// basic option (`-m tcp -p tcp -d X --dport 80`) or without `-m` (`-p tcp --dport 80`, an
/// implicit protocol match) lands in the right module.
fn module_owns(module: &str, option: &str) -> bool {
    let known: &[&str] = match module {
        "tcp" => &[
            "dport",
            "destination-port",
            "sport",
            "source-port",
            "syn",
            "tcp-flags",
            "tcp-option",
        ],
        "udp" => &["dport", "destination-port", "sport", "source-port"],
        "sctp" => &["dport", "destination-port", "sport", "source-port", "chunk-types"],
        "comment" => &["comment"],
        "addrtype" => &["src-type", "dst-type", "limit-iface-in", "limit-iface-out"],
        "statistic" => &["mode", "probability", "every", "packet"],
        "recent" => &[
            "name", "set", "rcheck", "update", "remove", "seconds", "reap", "hitcount", "rttl", "mask",
            "rsource", "rdest",
        ],
        "mark" => &["mark"],
        "conntrack" => &[
            "ctstate",
            "ctproto",
            "ctorigsrc",
            "ctorigdst",
            "ctreplsrc",
            "ctrepldst",
            "ctorigsrcport",
            "ctorigdstport",
            "ctreplsrcport",
            "ctrepldstport",
            "ctstatus",
            "ctexpire",
            "ctdir",
        ],
        "state" => &["state"],
        "nfacct" => &["nfacct-name"],
        "multiport" => &["dports", "destination-ports", "sports", "source-ports", "ports"],
        _ => return true, // unknown module: assume it owns what follows it
    };
    known.contains(&option)
}

pub(crate) fn parse_rule(line: usize, text: &str, args: &[Token]) -> Result<Rule, String> {
    let mut p = RuleParser {
        args,
        i: 0,
        matches: Vec::new(),
        target: Target::None,
        protocol: None,
        modules: Vec::new(),
    };
    let mut negate = false;
    while let Some(token) = args.get(p.i) {
        p.i += 1;
        if token.is_bang() {
            negate = true;
            continue;
        }
        if !token.is_option() {
            return Err(format!("unexpected word {:?}", token.text));
        }
        p.option(token.text.as_str(), std::mem::take(&mut negate))?;
    }
    if negate {
        return Err("dangling '!'".to_string());
    }
    Ok(Rule {
        text: text.to_string(),
        line,
        spec: args.iter().map(|t| t.text.clone()).collect(),
        matches: p.matches,
        target: p.target,
    })
}

/// One rule's arguments being read, option by option.
struct RuleParser<'t> {
    args: &'t [Token],
    /// The next argument.
    i: usize,
    matches: Vec<Match>,
    target: Target,
    /// The `-p` protocol, for implicit protocol matches.
    protocol: Option<String>,
    /// Index into `matches` of each loaded module, most recent last.
    modules: Vec<usize>,
}

impl RuleParser<'_> {
    fn value(&mut self, option: &str) -> Result<String, String> {
        take_value(self.args, &mut self.i, option)
    }

    fn push(&mut self, negated: bool, kind: MatchKind) {
        self.matches.push(Match { negated, kind });
    }

    /// The option just read and its values.
    fn option(&mut self, option: &str, negated: bool) -> Result<(), String> {
        match option {
            "-p" | "--protocol" => {
                let name = normalize_protocol(&self.value(option)?);
                self.protocol = Some(name.clone());
                self.push(negated, MatchKind::Protocol(name));
            }
            "-s" | "--source" | "--src" | "-d" | "--destination" | "--dst" => {
                let value = self.value(option)?;
                let nets = value.split(',').map(parse_net).collect::<Result<Vec<_>, _>>()?;
                let kind = if option.starts_with("-s") || option.starts_with("--s") {
                    MatchKind::Source(nets)
                } else {
                    MatchKind::Destination(nets)
                };
                self.push(negated, kind);
            }
            "-i" | "--in-interface" => {
                let value = self.value(option)?;
                self.push(negated, MatchKind::InIface(value));
            }
            "-o" | "--out-interface" => {
                let value = self.value(option)?;
                self.push(negated, MatchKind::OutIface(value));
            }
            "-f" | "--fragment" => self.push(negated, MatchKind::Fragment),
            "-4" | "--ipv4" => self.push(false, MatchKind::Family(4)),
            "-6" | "--ipv6" => self.push(false, MatchKind::Family(6)),
            "-c" | "--set-counters" => {
                self.value(option)?;
                self.value(option)?;
            }
            "-m" | "--match" => {
                let name = self.value(option)?;
                self.load(name);
            }
            "-j" | "--jump" | "-g" | "--goto" => self.target = self.jump(option)?,
            long if long.starts_with("--") => self.module_option(long, negated)?,
            other => return Err(format!("unsupported option {other:?}")),
        }
        Ok(())
    }

    /// Loads match module `name`: later options may belong to it.
    fn load(&mut self, name: String) -> usize {
        self.modules.push(self.matches.len());
        self.push(
            false,
            MatchKind::Module(Module {
                name,
                options: Vec::new(),
            }),
        );
        self.matches.len() - 1
    }

    /// `-j NAME [--option values]...` or `-g CHAIN`: the target options run to the end of the rule.
    fn jump(&mut self, option: &str) -> Result<Target, String> {
        let name = self.value(option)?;
        let args = self.args;
        let mut options = Vec::new();
        while self.i < args.len() {
            let mut opt_negated = false;
            if args[self.i].is_bang() {
                opt_negated = true;
                self.i += 1;
            }
            let Some(t) = args.get(self.i) else { break };
            if !t.is_option() || !t.text.starts_with("--") {
                return Err(format!("unexpected word {:?} after -j {name}", t.text));
            }
            self.i += 1;
            let values = take_values(args, &mut self.i);
            options.push(Opt {
                negated: opt_negated,
                name: t.text.trim_start_matches('-').to_string(),
                values,
            });
        }
        if option.starts_with("-g") || option.starts_with("--g") {
            Ok(Target::Goto(name))
        } else {
            parse_target(&name, &options)
        }
    }

    /// A long option of a match module: the latest loaded module that owns it, else the `-p`
    /// protocol's module loaded implicitly (`-p tcp --dport 80`).
    fn module_option(&mut self, long: &str, negated: bool) -> Result<(), String> {
        let name = long.trim_start_matches('-').to_string();
        let values = take_values(self.args, &mut self.i);
        let opt = Opt {
            negated,
            name,
            values,
        };
        let owner = self
            .modules
            .iter()
            .rev()
            .copied()
            .find(|&m| module_name(&self.matches[m]).is_some_and(|n| module_owns(n, &opt.name)));
        let owner = match owner {
            Some(m) => m,
            None => {
                let proto = self.protocol.clone().filter(|p| module_owns_proto(p, &opt.name));
                let Some(proto) = proto else {
                    return Err(format!("option --{} belongs to no match", opt.name));
                };
                self.load(proto)
            }
        };
        if let MatchKind::Module(module) = &mut self.matches[owner].kind {
            module.options.push(opt);
        }
        Ok(())
    }
}

fn module_name(m: &Match) -> Option<&str> {
    match &m.kind {
        MatchKind::Module(module) => Some(module.name.as_str()),
        _ => None,
    }
}

fn module_owns_proto(proto: &str, option: &str) -> bool {
    matches!(proto, "tcp" | "udp" | "sctp") && module_owns(proto, option)
}

fn take_value(args: &[Token], i: &mut usize, option: &str) -> Result<String, String> {
    match args.get(*i) {
        Some(t) if !t.is_option() && !t.is_bang() => {
            *i += 1;
            Ok(t.text.clone())
        }
        _ => Err(format!("{option} needs a value")),
    }
}

/// Values of a long option: words up to the next option or `!`.
fn take_values(args: &[Token], i: &mut usize) -> Vec<String> {
    let mut values = Vec::new();
    while let Some(t) = args.get(*i) {
        if t.is_option() || t.is_bang() {
            break;
        }
        values.push(t.text.clone());
        *i += 1;
    }
    values
}

fn normalize_protocol(value: &str) -> String {
    match value.to_ascii_lowercase().as_str() {
        "6" => "tcp".to_string(),
        "17" => "udp".to_string(),
        "132" => "sctp".to_string(),
        "1" => "icmp".to_string(),
        "0" => "all".to_string(),
        other => other.to_string(),
    }
}

/// `10.0.0.0/8`, `10.0.0.1` (a /32), `fd00::/64`, `fd00::1`.
pub(crate) fn parse_net(value: &str) -> Result<IpNet, String> {
    if let Ok(net) = value.parse::<IpNet>() {
        return Ok(net);
    }
    value
        .parse::<IpAddr>()
        .map(IpNet::from)
        .map_err(|_| format!("bad address {value:?}"))
}

fn parse_target(name: &str, options: &[Opt]) -> Result<Target, String> {
    let first = |opt: &str| {
        options
            .iter()
            .find(|o| o.name == opt)
            .and_then(|o| o.values.first())
            .map(String::as_str)
    };
    Ok(match name {
        "ACCEPT" => Target::Accept,
        "DROP" => Target::Drop,
        "REJECT" => Target::Reject,
        "RETURN" => Target::Return,
        "MASQUERADE" => Target::Masquerade,
        "SNAT" => Target::Snat,
        "DNAT" => {
            let to = first("to-destination")
                .or_else(|| first("to"))
                .ok_or("DNAT without --to-destination")?;
            Target::Dnat(parse_dnat(to)?)
        }
        "MARK" => {
            let op = if let Some(v) = first("or-mark") {
                MarkOp::Or(parse_u32(v)?)
            } else if let Some(v) = first("xor-mark") {
                MarkOp::Xor(parse_u32(v)?)
            } else if let Some(v) = first("and-mark") {
                MarkOp::And(parse_u32(v)?)
            } else if let Some(v) = first("set-xmark") {
                let (value, mask) = parse_value_mask(v)?;
                MarkOp::SetXmark { value, mask }
            } else if let Some(v) = first("set-mark") {
                let (value, mask) = parse_value_mask(v)?;
                MarkOp::SetMark { value, mask }
            } else {
                return Err("MARK without a supported operation".to_string());
            };
            Target::Mark(op)
        }
        "LOG" | "NFLOG" | "ULOG" | "TRACE" | "AUDIT" | "CT" | "NOTRACK" | "CONNMARK" | "CHECKSUM"
        | "TCPMSS" | "CLASSIFY" | "DSCP" | "TOS" | "TTL" | "HL" | "SET" | "QUEUE" | "NFQUEUE"
        | "REDIRECT" | "TPROXY" => Target::Other(name.to_string()),
        chain => Target::Jump(chain.to_string()),
    })
}

/// `IP`, `IP:PORT`, `[IPv6]`, `[IPv6]:PORT`, bare `IPv6`; ranges keep their first element.
fn parse_dnat(value: &str) -> Result<DnatTo, String> {
    let bad = || format!("bad DNAT destination {value:?}");
    let (addr_part, port_part) = if let Some(rest) = value.strip_prefix('[') {
        let (addr, after) = rest.split_once(']').ok_or_else(bad)?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or_else(bad)?),
        };
        (addr, port)
    } else if value.matches(':').count() > 1 {
        (value, None) // bare IPv6 address, no port
    } else {
        match value.split_once(':') {
            Some((a, p)) => (a, Some(p)),
            None => (value, None),
        }
    };
    let (first_addr, addr_ranged) = match addr_part.split_once('-') {
        Some((a, _)) => (a, true),
        None => (addr_part, false),
    };
    let addr: IpAddr = first_addr.parse().map_err(|_| bad())?;
    let (port, port_ranged) = match port_part {
        None => (None, false),
        Some(p) => {
            let (first_port, ranged) = match p.split_once('-') {
                Some((a, _)) => (a, true),
                None => (p, false),
            };
            (Some(first_port.parse::<u16>().map_err(|_| bad())?), ranged)
        }
    };
    Ok(DnatTo {
        addr,
        port,
        ranged: addr_ranged || port_ranged,
    })
}

pub(crate) fn parse_u32(value: &str) -> Result<u32, String> {
    let parsed = match value.strip_prefix("0x").or_else(|| value.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => value.parse::<u32>(),
    };
    parsed.map_err(|_| format!("bad number {value:?}"))
}

/// `value[/mask]`; a missing mask is all ones.
pub(crate) fn parse_value_mask(value: &str) -> Result<(u32, u32), String> {
    match value.split_once('/') {
        Some((v, m)) => Ok((parse_u32(v)?, parse_u32(m)?)),
        None => Ok((parse_u32(value)?, u32::MAX)),
    }
}
