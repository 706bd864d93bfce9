"""Soak benchmark: many simulated points and some live local points into one MLflow store, then a full resume.

Not a timed test: it prints what happened. Reported:
  points     - planned, run, reused, failed (per part), and after the run: FINISHED child runs, duplicates, runs left RUNNING
  retries    - how often this process retried a locked sqlite store (workbench.tracking.runs.RETRIES)
  time       - wall and CPU seconds per part, and of the resume (which must run nothing)
  memory     - this process's RSS before, after the sim part, after the live part and after the resume; tracemalloc's
               current/peak Python allocations over the whole soak (the live graph's own processes are not counted)
  processes  - processes this soak started that are still alive at the end (must be none)

Sim points: every model's full one-group-at-a-time plan, with as many concurrencies per model as it takes to reach
--sim-points. Live points: k-exaone-2's recipe and baseline on the local target (Dynamo frontend + mocker workers +
AIPerf, timing simulated), --live-points concurrencies spread over the two variants. Numbers from both are SIMULATED
timing (sim engine, mocker), never measured on a GPU: the soak measures the workbench, not a model.

Usage: .venv/bin/python bench/soak.py [--sim-points 200] [--live-points 20] [--request-count 40] [--out runs/bench/soak.json]
"""
import argparse, json, math, os, sqlite3, tempfile, time, tracemalloc
from pathlib import Path


def rss_mb() -> float:
    "Resident set size of this process in MiB (from /proc)."
    for line in Path('/proc/self/status').read_text().splitlines():
        if line.startswith('VmRSS:'): return int(line.split()[1])/1024
    return float('nan')


def store_check(db:Path) -> dict:
    "Child runs by status, duplicate FINISHED point keys and RUNNING runs, read straight from the sqlite file."
    con = sqlite3.connect(f'file:{db}?mode=ro', uri=True, timeout=30)
    try:
        rows = con.execute("""select r.status, k.value from runs r join tags t on t.run_uuid = r.run_uuid and t.key = 'workbench.kind' and t.value = 'point'
                              join tags k on k.run_uuid = r.run_uuid and k.key = 'workbench.point_key'""").fetchall()
        running = con.execute("select count(*) from runs where status = 'RUNNING'").fetchone()[0]
    finally: con.close()
    by = {}
    for s, _ in rows: by[s] = by.get(s, 0) + 1
    fin = [k for s, k in rows if s == 'FINISHED']
    return {'child_runs': by, 'finished_keys': len(set(fin)), 'duplicate_finished': len(fin)-len(set(fin)), 'running': running}


def sim_concurrencies(target:int) -> dict[str, list[int]]:
    "Concurrencies per model so that the models' full plans add up to at least `target` points."
    from workbench.domain.loading import list_recipes
    from workbench.studies.study import plan_study
    ladder = [1, 4, 16, 64, 2, 8, 32, 128, 256, 3, 6, 12, 24, 48, 96]
    nv = {m: sum(1 for p in plan_study(m) if p.variant) for m in list_recipes()}
    k = {m: 1 for m in nv}
    while sum(nv[m]*k[m] for m in nv) < target:
        m = min(nv, key=lambda m: (k[m], -nv[m])); k[m] += 1
    return {m: sorted(ladder[:k[m]]) for m in nv}


def part(name, fn):
    "Run `fn`, timing wall and CPU; returns (result, timing dict)."
    w0, c0 = time.perf_counter(), time.process_time()
    r = fn()
    return r, {'wall_s': time.perf_counter()-w0, 'cpu_s': time.process_time()-c0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--sim-points', type=int, default=200)
    ap.add_argument('--live-points', type=int, default=20)
    ap.add_argument('--request-count', type=int, default=40, help='requests per sim point')
    ap.add_argument('--live-requests', type=int, default=10, help='request cap per live point (at least the concurrency)')
    ap.add_argument('--out', default=None)
    a = ap.parse_args()
    runs = Path(tempfile.mkdtemp(prefix='soak-')); os.environ['WORKBENCH_RUNS'] = str(runs)
    tracemalloc.start()
    from workbench.tracking import runs as tracking
    from workbench.studies.study import run_study
    rss = {'start': rss_mb()}
    db = runs/'mlflow.db'; uri = tracking.fresh_store(db)
    r0 = tracking.RETRIES['locked']
    report = {'host_cpus': os.cpu_count(), 'runs': str(runs), 'request_count': a.request_count}

    concs = sim_concurrencies(a.sim_points)
    def sim():
        outs = {}
        for m, c in concs.items():
            outs[m] = run_study(m, concurrencies=c, request_count=a.request_count, tracking_uri=uri, progress=False,
                                target_options={'progress': False})
            rss[f'after_sim_{m}'] = rss_mb()
        return outs
    sim_out, t_sim = part('sim', sim)
    rss['after_sim'] = rss_mb()
    report['sim'] = {'concurrencies': concs, **t_sim, 'ran': sum(o.ran for o in sim_out.values()),
                     'reused': sum(o.reused for o in sim_out.values()), 'failed': sum(len(o.failed) for o in sim_out.values()),
                     'failures': [f for o in sim_out.values() for f in o.failed][:10]}
    print(f"sim: {report['sim']['ran']} points run, {report['sim']['failed']} failed in {t_sim['wall_s']:.0f} s wall "
          f"({t_sim['cpu_s']:.0f} s CPU); RSS {rss['after_sim']:.0f} MiB", flush=True)

    live_kw = {}
    if a.live_points:
        n_var = 2    # k-exaone-2: recipe + baseline (speculative group with no candidates)
        live_c = list(range(1, math.ceil(a.live_points/n_var)+1))
        live_kw = dict(groups=['speculative'], custom={'speculative': []}, concurrencies=live_c, request_count=a.live_requests,
                       tracking_uri=uri, progress=False, target='local', target_options={'progress': False, 'osl': 32})
        live_out, t_live = part('live', lambda: run_study('k-exaone-2', **live_kw))
        rss['after_live'] = rss_mb()
        report['live'] = {'concurrencies': live_c, **t_live, 'ran': live_out.ran, 'reused': live_out.reused,
                          'failed': len(live_out.failed), 'failures': live_out.failed[:10]}
        print(f"live: {live_out.ran} points run, {len(live_out.failed)} failed in {t_live['wall_s']:.0f} s wall; RSS {rss['after_live']:.0f} MiB", flush=True)

    def resume():
        outs = [run_study(m, concurrencies=c, request_count=a.request_count, tracking_uri=uri, progress=False,
                          target_options={'progress': False}) for m, c in concs.items()]
        if live_kw: outs.append(run_study('k-exaone-2', **live_kw))
        return outs
    res_out, t_res = part('resume', resume)
    rss['after_resume'] = rss_mb()
    report['resume'] = {**t_res, 'ran': sum(o.ran for o in res_out), 'reused': sum(o.reused for o in res_out),
                        'skipped_failed': sum(len(o.failed) for o in res_out)}
    cur, peak = tracemalloc.get_traced_memory(); tracemalloc.stop()
    report['memory'] = {'rss_mb': rss, 'rss_growth_after_sim_mb': rss['after_resume']-rss['after_sim'],
                        'tracemalloc_current_mb': cur/2**20, 'tracemalloc_peak_mb': peak/2**20}
    report['sqlite_locked_retries'] = tracking.RETRIES['locked']-r0
    report['store'] = store_check(db)
    import psutil
    kids = [p.pid for p in psutil.Process().children(recursive=True) if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    report['processes_left'] = kids
    out = Path(a.out or Path(__file__).resolve().parents[1]/'runs'/'bench'/'soak.json')
    out.parent.mkdir(parents=True, exist_ok=True); out.write_text(json.dumps(report, indent=1, default=str))
    s = report['store']
    print(f"resume: {report['resume']['ran']} run, {report['resume']['reused']} reused in {t_res['wall_s']:.0f} s")
    print(f"store: child runs {s['child_runs']}, {s['finished_keys']} distinct finished points, {s['duplicate_finished']} duplicates, "
          f"{s['running']} RUNNING; sqlite 'locked' retries {report['sqlite_locked_retries']}")
    print(f"RSS MiB: " + ', '.join(f'{k} {v:.0f}' for k, v in rss.items()) +
          f"; tracemalloc current {cur/2**20:.1f} MiB, peak {peak/2**20:.1f} MiB; processes left: {kids or 'none'}")
    print(f'written to {out}')


if __name__ == '__main__':
    main()
