-- The labctl results store: ONE schema for the embedded store (DuckDB over Parquet files) and for
-- PostgreSQL. Every run folder (results/<run-id>/) becomes rows here; the run folder stays the
-- source of truth (`labctl runs import` rebuilds a run's rows from it, idempotently).
--
-- Conventions (the same as the run folder's, see results/README.md):
--   *_utc   wall-clock time, UTC, TIMESTAMP without a zone
--   *_ts_s  lab time in seconds since the Unix epoch (DOUBLE PRECISION), what samples are stamped with
--   *_s     lab seconds (durations); units are in the column names (_pct percent, _mb megabytes)
--   *_json  a JSON document stored as TEXT (the same on both databases; json_extract / ::jsonb reads it)
-- Text columns that are lists hold the items joined by ", ".
-- Only portable SQL here: the file is executed as it is by DuckDB and by PostgreSQL 15.

-- One row per run: run.json.
CREATE TABLE IF NOT EXISTS runs (
    run_id            TEXT NOT NULL,      -- the run folder's name: <UTC start>-<plan>-<4 hex digits>
    lab               TEXT NOT NULL,      -- the lab's name from the inventory
    plan              TEXT NOT NULL,      -- the plan(s) the run belongs to, e.g. boot_storm
    configuration     TEXT,               -- lab configuration, e.g. standalone, ha
    outcome           TEXT NOT NULL,      -- running, passed, failed, lab_fault, interrupted, error
    reason            TEXT,               -- one line: why the run did not pass
    started_utc       TIMESTAMP NOT NULL, -- wall clock when the run started
    ended_utc         TIMESTAMP,          -- wall clock when it ended (NULL while running or if it died)
    duration_s        DOUBLE PRECISION,   -- wall seconds from start to end
    started_lab_ts_s  DOUBLE PRECISION,   -- the lab clock at the start
    ended_lab_ts_s    DOUBLE PRECISION,   -- the lab clock at the end
    cells             INTEGER,            -- cells the run lists in run.json
    simulated         BOOLEAN,            -- true for the simulated lab
    time_scale        DOUBLE PRECISION,   -- lab seconds per wall second (1 on real hardware)
    host              TEXT,               -- the controller host the run ran on
    labctl_version    TEXT,               -- version of labctl
    git_commit        TEXT,               -- commit of the labctl checkout
    git_dirty         BOOLEAN,            -- whether tracked files had local changes
    inventory_file    TEXT,               -- absolute path of the inventory file
    inventory_sha256  TEXT,               -- SHA-256 of the inventory file's bytes
    lease             TEXT,               -- the lease the run held on the lab
    parameters_json   TEXT,               -- the plan parameters as the run used them
    profile           TEXT,               -- the parameter profile, e.g. quick or full (NULL: not recorded)
    params_key        TEXT,               -- digest of profile + resolved plan parameters: runs alike share it
    extra_json        TEXT,               -- what other parts added to run.json (firmware versions ...)
    folder            TEXT,               -- the run folder as the writer saw it (host:path)
    stored_utc        TIMESTAMP NOT NULL, -- when the store last wrote this row
    schema_version    INTEGER NOT NULL,   -- version of this schema the row was written with
    PRIMARY KEY (run_id)
);

-- One row per cell: cells/<cell-id>/summary.json, with the verdict's outcome.
CREATE TABLE IF NOT EXISTS cells (
    run_id            TEXT NOT NULL,      -- the run
    cell              TEXT NOT NULL,      -- the cell id, e.g. boot_storm-standalone-050
    seq               INTEGER NOT NULL,   -- position in the run (0 = first cell run)
    plan              TEXT NOT NULL,      -- e.g. boot_storm, copy_reboot
    scenario          TEXT NOT NULL,      -- the scenario that ran the cell
    configuration     TEXT,               -- lab configuration of the cell
    outcome           TEXT NOT NULL,      -- pass, marginal, no_data, fail, lab_fault, error, interrupted
    reason            TEXT,               -- one line: why the cell did not pass
    verdict_outcome   TEXT,               -- the criteria's outcome (NULL: no criteria were judged)
    window_start_ts_s DOUBLE PRECISION,   -- the span the criteria and summaries are taken over
    window_end_ts_s   DOUBLE PRECISION,   -- (end of that span)
    window_s          DOUBLE PRECISION,   -- its length, lab seconds
    storm_start_ts_s  DOUBLE PRECISION,   -- time zero of the over-time figures
    clients           INTEGER NOT NULL,   -- machines with an outcome in the cell
    never_booted      INTEGER NOT NULL,   -- machines of a booting role (storm, rebooter) without a boot time
    restore_ok        BOOLEAN,            -- the machines were brought back (NULL: no restore recorded)
    restore_detail    TEXT,               -- one line: what failed in the restore
    left_on           TEXT,               -- machines still on after the restore
    entities_json     TEXT,               -- named entities: streaming_server, write_cache_disk, ...
    extra_json        TEXT,               -- scenario-specific scalars
    response_index_json TEXT,             -- VDI storms: the response-time index (summary.json response_index)
    PRIMARY KEY (run_id, cell)
);

-- The cell's own parameters (group_size, copiers, copy_path ...), one row per parameter.
CREATE TABLE IF NOT EXISTS cell_parameters (
    run_id            TEXT NOT NULL,      -- the run (runs.run_id)
    cell              TEXT NOT NULL,      -- the cell id (cells.cell)
    name              TEXT NOT NULL,      -- e.g. group_size
    value_num         DOUBLE PRECISION,   -- the value when it is a number (NULL otherwise)
    value_text        TEXT,               -- the value when it is text (NULL otherwise)
    value_json        TEXT NOT NULL,      -- the value as JSON, whatever its type
    PRIMARY KEY (run_id, cell, name)
);

-- One row per judged criterion: cells/<cell-id>/verdicts.json.
CREATE TABLE IF NOT EXISTS verdicts (
    run_id            TEXT NOT NULL,      -- the run (runs.run_id)
    cell              TEXT NOT NULL,      -- the cell id (cells.cell)
    criterion         TEXT NOT NULL,      -- the criterion's name in the criteria file
    outcome           TEXT NOT NULL,      -- pass, marginal, no_data, fail, lab_fault
    required          BOOLEAN NOT NULL,   -- false: its no_data does not fail the cell
    statistic         TEXT NOT NULL,      -- mean, peak, p95, value (per-machine results) ...
    unit              TEXT,               -- unit of the judged value
    selector          TEXT NOT NULL,      -- what was judged, e.g. typeperf/pvs-01/D:/disk_queue_len
    observed          DOUBLE PRECISION,   -- the value judged (the worst entity's)
    entity            TEXT,               -- the entity that decided
    pass_min          DOUBLE PRECISION,   -- pass band (inclusive limits; NULL: open)
    pass_max          DOUBLE PRECISION,   -- (upper limit of the pass band)
    marginal_min      DOUBLE PRECISION,   -- marginal band
    marginal_max      DOUBLE PRECISION,   -- (upper limit of the marginal band)
    threshold         DOUBLE PRECISION,   -- for time_above / storm_duration
    coverage          DOUBLE PRECISION,   -- lowest coverage (0..1) of the judged series
    first_crossing_ts_s DOUBLE PRECISION, -- when the series first left the pass band
    missing           TEXT,               -- expected entities that had no data
    message           TEXT,               -- the one-line explanation shown in reports
    PRIMARY KEY (run_id, cell, criterion)
);

-- One row per recorded series of a cell, summarised over the cell's window (summary.json metrics).
CREATE TABLE IF NOT EXISTS series_summaries (
    run_id            TEXT NOT NULL,      -- the run (runs.run_id)
    cell              TEXT NOT NULL,      -- the cell id (cells.cell)
    source            TEXT NOT NULL,      -- typeperf, redfish, unity, vcenter, pvs ...
    entity            TEXT NOT NULL,      -- pvs-01, pvs-01/D:, pvs-01/NIC 1 ...
    metric            TEXT NOT NULL,      -- cpu_pct, disk_queue_len ...
    unit              TEXT,               -- %, requests, MB ...
    samples           INTEGER NOT NULL,   -- samples inside the window
    expected_interval_s DOUBLE PRECISION, -- the source's promised sample interval
    coverage          DOUBLE PRECISION,   -- share (0..1) of the window not inside a gap
    gaps              INTEGER NOT NULL,   -- silences longer than twice the interval
    longest_gap_s     DOUBLE PRECISION,   -- the longest of them, lab seconds (NULL: none)
    start_ts_s        DOUBLE PRECISION,   -- first sample in the window
    end_ts_s          DOUBLE PRECISION,   -- last sample in the window
    peak              DOUBLE PRECISION,   -- largest value
    peak_ts_s         DOUBLE PRECISION,   -- when the (first) peak was
    mean              DOUBLE PRECISION,   -- mean of the samples
    p95               DOUBLE PRECISION,   -- 95th percentile
    minimum           DOUBLE PRECISION,   -- smallest value
    last_value        DOUBLE PRECISION,   -- last value
    PRIMARY KEY (run_id, cell, source, entity, metric)
);

-- One row per machine of a cell: its outcome and per-machine figures (summary.json clients).
CREATE TABLE IF NOT EXISTS client_outcomes (
    run_id            TEXT NOT NULL,      -- the run (runs.run_id)
    cell              TEXT NOT NULL,      -- the cell id (cells.cell)
    client            TEXT NOT NULL,      -- the machine
    role              TEXT NOT NULL,      -- storm, copier, rebooter, desktop ...
    outcome           TEXT NOT NULL,      -- ready, timeout, error, copied, copy_failed, excluded
    boot_time_s       DOUBLE PRECISION,   -- first network contact to agent start (streaming software)
    retries           INTEGER,            -- UDP requests re-sent after a timeout
    time_to_ready_s   DOUBLE PRECISION,   -- the wake/reboot command to the machine seen ready
    copy_s            DOUBLE PRECISION,   -- copy duration (copiers)
    sent_ts_s         DOUBLE PRECISION,   -- when its power action was sent
    delivered_ts_s    DOUBLE PRECISION,   -- when the machine acted on it
    detail            TEXT,               -- one line: what was last seen, or why it failed
    PRIMARY KEY (run_id, cell, client)
);

-- One row per power burst of a cell: how simultaneous "simultaneous" was.
CREATE TABLE IF NOT EXISTS group_actions (
    run_id            TEXT NOT NULL,      -- the run (runs.run_id)
    cell              TEXT NOT NULL,      -- the cell id (cells.cell)
    seq               INTEGER NOT NULL,   -- order of the burst in the cell
    action            TEXT NOT NULL,      -- on, off, reboot, reset
    backend           TEXT NOT NULL,      -- wol-ssh, redfish, vcenter, ipmi
    machines          INTEGER NOT NULL,   -- machines the action was for
    ok                INTEGER NOT NULL,   -- machines it was sent to without error
    failed            TEXT,               -- machine: reason, for the others
    first_sent_ts_s   DOUBLE PRECISION,   -- the first send
    send_spread_s     DOUBLE PRECISION,   -- first to last send, lab seconds
    send_spread_wall_s DOUBLE PRECISION,  -- the same in wall seconds
    delivery_spread_s DOUBLE PRECISION,   -- first to last delivery, where observable
    PRIMARY KEY (run_id, cell, seq)
);

-- The key figures of a cell (labctl.records.figures): what a comparison and the trends read.
-- Taken from the typed summary once, by one function, so SQL, `labctl compare` and the nightly
-- trends agree on what "boot_time_s mean" of a cell is.
CREATE TABLE IF NOT EXISTS cell_figures (
    run_id            TEXT NOT NULL,      -- the run (runs.run_id)
    cell              TEXT NOT NULL,      -- the cell id (cells.cell)
    figure            TEXT NOT NULL,      -- e.g. "boot_time_s mean", "disk_queue_len peak pvs-01/D:"
    kind              TEXT NOT NULL,      -- the metric: boot_time_s, retries, disk_queue_len ...
    statistic         TEXT NOT NULL,      -- mean, max, peak, count
    source            TEXT NOT NULL,      -- clients (per-machine outcomes) or the series' source
    entity            TEXT NOT NULL,      -- the series' entity ('' for per-machine figures)
    unit              TEXT,               -- unit of value
    direction         TEXT NOT NULL,      -- up_is_worse, down_is_worse, neutral
    value             DOUBLE PRECISION NOT NULL, -- the figure
    n                 INTEGER NOT NULL,   -- values behind it: machines, or samples of the series
    coverage          DOUBLE PRECISION,   -- the series' coverage of the window (NULL: per-machine)
    PRIMARY KEY (run_id, cell, figure)
);

-- Every metric sample: series.csv.
CREATE TABLE IF NOT EXISTS samples (
    run_id            TEXT NOT NULL,      -- the run (runs.run_id)
    cell              TEXT NOT NULL,      -- '' for samples outside any cell
    source            TEXT NOT NULL,      -- where the value came from: typeperf, redfish, unity, vcenter, pvs
    entity            TEXT NOT NULL,      -- what it is about: a machine, a NIC, a volume, a LUN
    metric            TEXT NOT NULL,      -- e.g. cpu_pct, disk_queue_len
    unit              TEXT,               -- %, MB, requests, s ...
    ts_s              DOUBLE PRECISION NOT NULL, -- the source's own timestamp, lab epoch seconds
    value             DOUBLE PRECISION    -- NULL where the source reported none (nan)
);

-- Baselines: `labctl baseline set LAB PLAN RUN...` adds one set (one row per run); the newest set
-- of a lab + plan + kind (profile and plan parameters) is its baseline, the older ones its history.
CREATE TABLE IF NOT EXISTS baselines (
    set_id            TEXT NOT NULL,      -- <UTC time>-<4 hex digits>, sorts by time
    lab               TEXT NOT NULL,      -- the lab's name
    plan              TEXT NOT NULL,      -- the plan
    profile           TEXT,               -- the runs' parameter profile (NULL: not recorded)
    params_key        TEXT,               -- the runs' runs.params_key (NULL: a set made before it existed)
    parameters_json   TEXT,               -- the runs' resolved plan parameters
    run_id            TEXT NOT NULL,      -- one of the set's runs
    position          INTEGER NOT NULL,   -- its place in the set as given
    set_utc           TIMESTAMP NOT NULL, -- when the set was made
    set_by            TEXT,               -- who made it (user@host)
    note              TEXT,               -- why
    PRIMARY KEY (set_id, run_id)
);

-- Indexes: for PostgreSQL (the embedded store scans Parquet files and has none).
CREATE INDEX IF NOT EXISTS runs_lab_plan ON runs (lab, plan, started_utc);
CREATE INDEX IF NOT EXISTS samples_run_cell ON samples (run_id, cell);
CREATE INDEX IF NOT EXISTS baselines_lab_plan ON baselines (lab, plan, set_utc);
