//! YugabyteDB's topology: where each node is (cloud, region, zone), what
//! kind it is (primary or read replica), and the rule that says which of
//! them a new connection may go to.
//!
//! The rule is the one the YugabyteDB smart drivers document for
//! `load_balance` and `topology_keys`, so that a benchmark sends its
//! connections where the application's driver would:
//! - the node types: `any` (every node), `only-primary`, `only-rr` (read
//!   replicas), `prefer-primary` (primaries; read replicas only when no
//!   primary is usable), `prefer-rr` (the other way round);
//! - the topology keys, `cloud.region.zone[:N]` separated by commas (a
//!   `*` for the zone means every zone of the region): the nodes of
//!   priority 1 (`:1`, or no priority) while one of them is usable, else
//!   those of priority 2, and so on; when none of the keys' zones has a
//!   usable node, the rest of the cluster, unless the keys alone are
//!   allowed (the drivers' `fallback_to_topology_keys_only`).
//!
//! "Usable" is decided by the connection source ([`super::nodes`]): listed
//! by the last `yb_servers()` and not failed within the failed-host delay.
//! This module is pure, so that the rule is unit-tested on its own.

use std::fmt;

/// The most priority levels the smart drivers accept (`:1` to `:10`).
pub const MAX_PRIORITY: u32 = 10;

/// A node's kind, as `yb_servers()`'s `node_type` says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeType {
    Primary,
    ReadReplica,
}

impl NodeType {
    /// `primary`, `read_replica`; NULL (old versions) is a primary.
    pub fn parse(s: Option<&str>) -> NodeType {
        match s.map(str::trim) {
            Some(t) if t.eq_ignore_ascii_case("read_replica") => NodeType::ReadReplica,
            _ => NodeType::Primary,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            NodeType::Primary => "primary",
            NodeType::ReadReplica => "read_replica",
        }
    }
}

/// Where a node is, and its kind: a row of `yb_servers()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub node_type: NodeType,
    pub cloud: String,
    pub region: String,
    pub zone: String,
}

impl Place {
    /// `cloud.region.zone`, as reports name the zone.
    pub fn zone_name(&self) -> String {
        format!("{}.{}.{}", self.cloud, self.region, self.zone)
    }
}

/// Which node types a connection may go to (`--load-balance`'s smart
/// driver modes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NodeTypes {
    Any,
    /// Also what `--yb-discover` alone means: read replicas refuse writes.
    #[default]
    OnlyPrimary,
    OnlyRr,
    PreferPrimary,
    PreferRr,
}

impl NodeTypes {
    pub fn name(self) -> &'static str {
        match self {
            NodeTypes::Any => "any",
            NodeTypes::OnlyPrimary => "only-primary",
            NodeTypes::OnlyRr => "only-rr",
            NodeTypes::PreferPrimary => "prefer-primary",
            NodeTypes::PreferRr => "prefer-rr",
        }
    }

    /// The groups of node types tried in order: the first group with a
    /// usable node wins. `None` in a group stands for every type.
    fn groups(self) -> &'static [Option<NodeType>] {
        match self {
            NodeTypes::Any => &[None],
            NodeTypes::OnlyPrimary => &[Some(NodeType::Primary)],
            NodeTypes::OnlyRr => &[Some(NodeType::ReadReplica)],
            NodeTypes::PreferPrimary => &[Some(NodeType::Primary), Some(NodeType::ReadReplica)],
            NodeTypes::PreferRr => &[Some(NodeType::ReadReplica), Some(NodeType::Primary)],
        }
    }
}

/// One entry of `--topology-keys`: a zone, or every zone of a region.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Placement {
    cloud: String,
    region: String,
    /// None: `*`, every zone of the region.
    zone: Option<String>,
}

impl Placement {
    fn matches(&self, p: &Place) -> bool {
        self.cloud.eq_ignore_ascii_case(&p.cloud)
            && self.region.eq_ignore_ascii_case(&p.region)
            && self
                .zone
                .as_deref()
                .is_none_or(|z| z.eq_ignore_ascii_case(&p.zone))
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let zone = self.zone.as_deref().unwrap_or("*");
        write!(f, "{}.{}.{zone}", self.cloud, self.region)
    }
}

/// `--topology-keys`, by priority (lowest number first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyKeys {
    levels: Vec<(u32, Vec<Placement>)>,
}

impl TopologyKeys {
    /// Parses `cloud.region.zone[:N],…`; the error says what is wrong
    /// with which entry and what is expected.
    pub fn parse(text: &str) -> Result<TopologyKeys, String> {
        let mut levels: Vec<(u32, Vec<Placement>)> = Vec::new();
        for entry in text.split(',').map(str::trim) {
            if entry.is_empty() {
                return Err(format!(
                    "--topology-keys '{text}' has an empty entry: write cloud.region.zone[:N] entries separated by commas"
                ));
            }
            let (place, priority) = match entry.split_once(':') {
                Some((p, n)) => {
                    let n: u32 = n.trim().parse().ok().filter(|n| (1..=MAX_PRIORITY).contains(n)).ok_or_else(|| {
                        format!("--topology-keys entry '{entry}': the priority after ':' must be a whole number from 1 to {MAX_PRIORITY}")
                    })?;
                    (p.trim(), n)
                }
                None => (entry, 1),
            };
            let parts: Vec<&str> = place.split('.').map(str::trim).collect();
            let [cloud, region, zone] = parts[..] else {
                return Err(format!(
                    "--topology-keys entry '{entry}' is not cloud.region.zone (e.g. aws.us-east-1.us-east-1a, or aws.us-east-1.* for every zone of the region)"
                ));
            };
            if [cloud, region, zone].iter().any(|s| s.is_empty()) {
                return Err(format!(
                    "--topology-keys entry '{entry}' has an empty part: write cloud.region.zone"
                ));
            }
            if cloud == "*" || region == "*" {
                return Err(format!(
                    "--topology-keys entry '{entry}': only the zone may be '*' (cloud.region.*), as in the smart drivers"
                ));
            }
            let p = Placement {
                cloud: cloud.to_string(),
                region: region.to_string(),
                zone: (zone != "*").then(|| zone.to_string()),
            };
            match levels.iter_mut().find(|(n, _)| *n == priority) {
                Some((_, v)) => v.push(p),
                None => levels.push((priority, vec![p])),
            }
        }
        levels.sort_by_key(|(n, _)| *n);
        Ok(TopologyKeys { levels })
    }

    /// The entries (`cloud.region.zone:N`) that match none of `places`:
    /// most often a misspelt zone, which would otherwise only show as
    /// workers balanced over the fallback.
    pub fn unmatched<'p>(&self, places: impl Iterator<Item = &'p Place> + Clone) -> Vec<String> {
        self.levels
            .iter()
            .flat_map(|(n, ps)| ps.iter().map(move |p| (n, p)))
            .filter(|(_, p)| !places.clone().any(|place| p.matches(place)))
            .map(|(n, p)| format!("{p}:{n}"))
            .collect()
    }

    /// The priority of a node at `place`: the lowest level one of whose
    /// entries matches, None when no entry does.
    pub fn priority_of(&self, place: &Place) -> Option<u32> {
        self.levels
            .iter()
            .find(|(_, ps)| ps.iter().any(|p| p.matches(place)))
            .map(|(n, _)| *n)
    }
}

impl fmt::Display for TopologyKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (n, ps) in &self.levels {
            for p in ps {
                if !first {
                    f.write_str(",")?;
                }
                first = false;
                write!(f, "{p}:{n}")?;
            }
        }
        Ok(())
    }
}

/// Where new connections may go: node types, and zones by priority.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    pub types: NodeTypes,
    pub keys: Option<TopologyKeys>,
    /// No fallback to the rest of the cluster when no zone of the keys
    /// has a usable node (`--topology-keys-only`).
    pub keys_only: bool,
}

/// A node as the rule sees it: where it is (None: a host of a host list,
/// which has no place) and whether it is usable now.
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    pub place: Option<&'a Place>,
    pub usable: bool,
}

impl Topology {
    /// The nodes a new connection may go to now, by index: the usable
    /// nodes of the first node-type group and the first priority level
    /// that have any. Empty when no usable node qualifies at all.
    pub fn choose(&self, nodes: &[Candidate<'_>]) -> Vec<usize> {
        for group in self.types.groups() {
            let of_type = |c: &Candidate<'_>| {
                c.usable && group.is_none_or(|t| c.place.is_none_or(|p| p.node_type == t))
            };
            if let Some(keys) = &self.keys {
                for (level, _) in &keys.levels {
                    let found: Vec<usize> = indexes(nodes, |c| {
                        of_type(c) && c.place.and_then(|p| keys.priority_of(p)) == Some(*level)
                    });
                    if !found.is_empty() {
                        return found;
                    }
                }
                if self.keys_only {
                    continue;
                }
            }
            let found = indexes(nodes, of_type);
            if !found.is_empty() {
                return found;
            }
        }
        Vec::new()
    }

    /// How the balancing line and the record say it: the node types, and
    /// the keys when given.
    pub fn describe(&self) -> String {
        match &self.keys {
            Some(k) => format!(
                "{}, topology {k}{}",
                self.types.name(),
                if self.keys_only { " only" } else { "" }
            ),
            None => self.types.name().to_string(),
        }
    }
}

fn indexes(nodes: &[Candidate<'_>], keep: impl Fn(&Candidate<'_>) -> bool) -> Vec<usize> {
    nodes
        .iter()
        .enumerate()
        .filter(|(_, c)| keep(c))
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(t: NodeType, zone: &str) -> Place {
        let parts: Vec<&str> = zone.split('.').collect();
        Place {
            node_type: t,
            cloud: parts[0].into(),
            region: parts[1].into(),
            zone: parts[2].into(),
        }
    }

    const P: NodeType = NodeType::Primary;
    const R: NodeType = NodeType::ReadReplica;

    fn topo(types: NodeTypes, keys: Option<&str>) -> Topology {
        Topology {
            types,
            keys: keys.map(|k| TopologyKeys::parse(k).unwrap()),
            keys_only: false,
        }
    }

    fn choose(t: &Topology, nodes: &[(Place, bool)]) -> Vec<usize> {
        let c: Vec<Candidate<'_>> = nodes
            .iter()
            .map(|(p, u)| Candidate {
                place: Some(p),
                usable: *u,
            })
            .collect();
        t.choose(&c)
    }

    #[test]
    fn keys_parse_with_priorities_wildcards_and_defaults() {
        let k = TopologyKeys::parse("aws.r2.z2:2, aws.r1.z1 ,aws.r1.*:1,gcp.r3.z3:10").unwrap();
        assert_eq!(
            k.to_string(),
            "aws.r1.z1:1,aws.r1.*:1,aws.r2.z2:2,gcp.r3.z3:10"
        );
        assert_eq!(k.priority_of(&place(P, "aws.r1.zx")), Some(1));
        assert_eq!(k.priority_of(&place(P, "AWS.r2.z2")), Some(2));
        assert_eq!(k.priority_of(&place(P, "aws.r2.z9")), None);
    }

    #[test]
    fn entries_matching_no_node_are_named() {
        let k = TopologyKeys::parse("aws.r1.z1:1,aws.r1.zz:2,aws.r2.*:3").unwrap();
        let places = [place(P, "aws.r1.z1"), place(R, "aws.r2.z9")];
        assert_eq!(k.unmatched(places.iter()), ["aws.r1.zz:2"]);
        assert_eq!(
            k.unmatched(places[..1].iter()),
            ["aws.r1.zz:2", "aws.r2.*:3"]
        );
    }

    #[test]
    fn bad_keys_say_which_entry_and_why() {
        for (text, says) in [
            ("aws.r1", "not cloud.region.zone"),
            ("aws.r1.z1.x", "not cloud.region.zone"),
            ("aws.r1.z1:0", "from 1 to 10"),
            ("aws.r1.z1:11", "from 1 to 10"),
            ("aws.r1.z1:x", "from 1 to 10"),
            ("aws.r1.z1:", "from 1 to 10"),
            ("aws.*.z1", "only the zone"),
            ("aws..z1", "empty part"),
            ("aws.r1.z1,,aws.r2.z2", "empty entry"),
        ] {
            let e = TopologyKeys::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn the_first_priority_with_a_usable_node_wins_then_the_rest_of_the_cluster() {
        let t = topo(NodeTypes::OnlyPrimary, Some("c.r.a:1,c.r.b:2"));
        let mut nodes = vec![
            (place(P, "c.r.b"), true),
            (place(P, "c.r.a"), true),
            (place(P, "c.r.a"), true),
            (place(P, "c.r.c"), true),
        ];
        assert_eq!(choose(&t, &nodes), [1, 2]);
        nodes[1].1 = false;
        assert_eq!(choose(&t, &nodes), [2]);
        nodes[2].1 = false;
        assert_eq!(choose(&t, &nodes), [0]);
        nodes[0].1 = false;
        // No zone of the keys has a usable node: the rest of the cluster,
        // unless the keys alone are allowed.
        assert_eq!(choose(&t, &nodes), [3]);
        let only = Topology {
            keys_only: true,
            ..t.clone()
        };
        assert!(choose(&only, &nodes).is_empty());
        nodes[2].1 = true;
        assert_eq!(choose(&only, &nodes), [2]);
    }

    #[test]
    fn node_types_follow_the_smart_drivers_modes() {
        let nodes = [
            (place(P, "c.r.a"), true),
            (place(R, "c.r.a"), true),
            (place(P, "c.r.b"), false),
            (place(R, "c.r.b"), true),
        ];
        assert_eq!(choose(&topo(NodeTypes::Any, None), &nodes), [0, 1, 3]);
        assert_eq!(choose(&topo(NodeTypes::OnlyPrimary, None), &nodes), [0]);
        assert_eq!(choose(&topo(NodeTypes::OnlyRr, None), &nodes), [1, 3]);
        assert_eq!(choose(&topo(NodeTypes::PreferRr, None), &nodes), [1, 3]);
        let keyed = topo(NodeTypes::PreferPrimary, Some("c.r.b"));
        // The primary of zone b is down: the primary of the rest of the
        // cluster comes before any read replica.
        assert_eq!(choose(&keyed, &nodes), [0]);
        let no_primary = [(place(P, "c.r.a"), false), (place(R, "c.r.b"), true)];
        assert_eq!(choose(&keyed, &no_primary), [1]);
        assert!(choose(&topo(NodeTypes::OnlyPrimary, None), &no_primary).is_empty());
        // Read replicas in the preferred zone before those elsewhere.
        let rr = topo(NodeTypes::OnlyRr, Some("c.r.b:1"));
        assert_eq!(choose(&rr, &nodes), [3]);
    }

    #[test]
    fn hosts_without_a_place_are_all_candidates() {
        let c = [
            Candidate {
                place: None,
                usable: true,
            },
            Candidate {
                place: None,
                usable: false,
            },
            Candidate {
                place: None,
                usable: true,
            },
        ];
        assert_eq!(Topology::default().choose(&c), [0, 2]);
    }
}
