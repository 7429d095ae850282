//! The lab end to end: one scenario, one Proscenium server, a few seconds of load, and
//! the files a user reads afterwards.

use proscenium_lab::{Options, Profile, Results};

#[test]
fn a_quick_plaintext_run_writes_results_and_a_report_with_plots() {
    let out = tempfile::tempdir().unwrap();
    let options = Options {
        scenario: "plaintext".into(),
        servers: Some(vec!["proscenium:loops".parse().unwrap()]),
        profile: Profile::Quick,
        out: out.path().to_owned(),
        rounds: Some(1),
        server_cpus: None,
        load_cpus: None,
        command_line: "proscenium bench plaintext --servers proscenium:loops --rounds 1".into(),
    };
    let dirs = proscenium_lab::run(&options).unwrap();
    assert_eq!(dirs, [out.path().to_owned()]);

    let json = std::fs::read_to_string(out.path().join("results.json")).unwrap();
    let results: Results = serde_json::from_str(&json).unwrap();
    assert_eq!(results.scenario, "plaintext");
    assert!(results.machine.cores >= 1 && !results.versions.is_empty());
    assert_eq!(results.servers.len(), 1);
    assert!(
        results.servers[0].skipped.is_none(),
        "{:?}",
        results.servers[0]
    );
    assert_eq!(
        results.steps.len(),
        3,
        "a warm-up, keep-alive and pipelined"
    );
    assert!(results.steps[0].warmup && !results.steps[1].warmup);
    let provenance = results.provenance.as_ref().unwrap();
    assert_eq!(
        (provenance.rounds, provenance.server_cpus.is_empty()),
        (1, false)
    );
    assert!(provenance.command.contains("--rounds 1"));
    for step in &results.steps {
        let m = &step.measured;
        assert_eq!(
            (m.failed, step.invalid.as_deref()),
            (Some(0), None),
            "{step:?}"
        );
        let busy = step.server_utilisation.unwrap();
        assert!(busy > 0.0 && busy < 1.5, "utilisation {busy}");
        assert!(m.achieved_rps > 1_000.0, "{step:?}");
        assert_eq!(
            m.statuses["2xx"], m.requests,
            "every answer a 200: {step:?}"
        );
        assert!(
            m.latency_ms.p50 > 0.0 && m.latency_ms.max >= m.latency_ms.p50,
            "{step:?}"
        );
        let cpu = step.cpu_us_per_request.unwrap();
        assert!(cpu > 0.1 && cpu < 1_000.0, "CPU per request {cpu} µs");
        assert!(
            step.peak_rss_kib > 500 && step.peak_rss_kib < 1_000_000,
            "{step:?}"
        );
        assert!(step.command.contains("wrk"), "{}", step.command);
    }

    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), results.plots.len());
    assert_eq!(
        results.plots.len(),
        3,
        "throughput, CPU per request and utilisation"
    );
    for plot in &results.plots {
        let png = std::fs::read(out.path().join(format!("{plot}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{plot}.png is a PNG");
        assert!(html.contains(&format!("{plot}.png")));
    }
}
