//! Lua stages in a running graph, between stages written in Rust.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::LuaStage;
use crate::config::LuaSpec;
use crate::stage::{Admission, Connector, Graph, Inlet, Out, RunningGraph, Stage};

#[derive(Debug, Clone, Serialize)]
struct Order {
    id: u32,
    items: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Packed {
    id: u32,
    count: usize,
    first: String,
}

/// Time a busy machine may take to carry events through a graph.
const PATIENCE: Duration = Duration::from_secs(60);

/// A running graph: Rust `Order`s through an inlet into a Lua stage `pack` running
/// `script` (stateful, or stateless), and a Rust stage gathering the `Packed` it emits
/// on `packed`.
struct Packing {
    running: RunningGraph,
    orders: Inlet<Order>,
    gathered: Arc<Mutex<Vec<Packed>>>,
    _dir: tempfile::TempDir,
}

impl Packing {
    fn start(script: &str, spec: &LuaSpec, stateful: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pack.lua");
        std::fs::write(&file, script).unwrap();
        let gathered = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&gathered);
        let packed = Out::<Packed>::new("packed");
        let lua = LuaStage::new("pack", &file, spec).output(&packed);
        let lua = if stateful {
            lua.stateful::<Order>()
        } else {
            lua.stateless::<Order>()
        };
        let mut graph = Graph::new();
        let pack = graph.stage(lua);
        let gather = graph.stage(Stage::stateful(
            "gather",
            || (),
            move |(), packed: Packed, _| {
                into.lock().push(packed);
                Ok(())
            },
        ));
        graph.connect(&pack, "packed", &gather, Connector::decoupled());
        let running = graph.start(&std::collections::HashMap::new()).unwrap();
        let orders = running.inlet("orders", &pack, Admission::Block).unwrap();
        Self {
            running,
            orders,
            gathered,
            _dir: dir,
        }
    }

    fn send(&self, id: u32, items: &[&str]) {
        let items = items.iter().map(|item| (*item).to_owned()).collect();
        self.orders.send(Order { id, items }).unwrap();
    }

    /// Waits until `pack` has finished `events` (well or not) and `gather` what it
    /// sent; returns what was gathered, and how many of `pack`'s events failed.
    fn after(&self, events: u64) -> (Vec<Packed>, u64) {
        let until = Instant::now() + PATIENCE;
        loop {
            let stats = self.running.stats();
            let (pack, gather) = (stats.stage("pack").unwrap(), stats.stage("gather").unwrap());
            if pack.handled >= events && gather.handled >= pack.sent {
                return (self.gathered.lock().clone(), pack.failed);
            }
            assert!(
                Instant::now() < until,
                "pack finished {} of {events}",
                pack.handled
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn packed(id: u32, count: usize, first: &str) -> Packed {
    Packed {
        id,
        count,
        first: first.to_owned(),
    }
}

#[test]
fn issue39_a_lua_stage_takes_rust_events_as_tables_and_emits_rust_events() {
    let script = r#"
        function handle(order)
          emit("packed", { id = order.id, count = #order.items, first = order.items[1] })
        end
    "#;
    let packing = Packing::start(script, &LuaSpec::default(), false);
    packing.send(1, &["tea", "cup"]);
    packing.send(2, &["pot"]);
    let (gathered, failed) = packing.after(2);
    assert_eq!(gathered, [packed(1, 2, "tea"), packed(2, 1, "pot")]);
    assert_eq!(failed, 0);
}

/// What goes wrong in a call costs its event alone: a script error, an emit its port
/// cannot take or on a port the stage lacks, a call past its budget (whose state is
/// then made again, its globals gone) — and the events after it are served.
#[test]
fn issue39_a_lua_stage_call_that_fails_drops_its_event_and_the_next_is_served() {
    let script = r#"
        calls = 0
        function handle(order)
          calls = calls + 1
          if order.id == 2 then error("no second order") end
          if order.id == 3 then emit("packed", { id = "three" }) end
          if order.id == 4 then emit("elsewhere", {}) end
          if order.id == 5 then while true do end end
          emit("packed", { id = order.id, count = calls, first = order.items[1] })
        end
    "#;
    let spec = LuaSpec {
        instructions: 1_000_000,
        ..LuaSpec::default()
    };
    let packing = Packing::start(script, &spec, true);
    for id in 1..=6 {
        packing.send(id, &["x"]);
    }
    let (gathered, failed) = packing.after(6);
    // The sixth call is the first of the state made after the fifth ran too long.
    assert_eq!(gathered, [packed(1, 1, "x"), packed(6, 1, "x")]);
    assert_eq!(failed, 4);
}

#[test]
fn issue39_a_stateful_lua_stage_keeps_its_globals_between_events() {
    let script = r#"
        seen = {}
        function handle(order)
          table.insert(seen, order.items[1])
          emit("packed", { id = order.id, count = #seen, first = table.concat(seen, "+") })
        end
    "#;
    let packing = Packing::start(script, &LuaSpec::default(), true);
    packing.send(1, &["a"]);
    packing.send(2, &["b"]);
    let (gathered, _) = packing.after(2);
    assert_eq!(gathered, [packed(1, 1, "a"), packed(2, 2, "a+b")]);
}
