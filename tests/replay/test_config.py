import pytest

from eventpy.replay.config import ConfigError, load, parse


def test_the_grid_sweeps_rates_at_the_most_subscribers_and_subscribers_at_one_rate():
    c = parse({"replay": {"workload": "htm", "update_rates": [0, 50, 100], "subscribers": [400, 800],
                          "subscribers_rate": 50, "seeds": [1, 2], "modes": ["parametric", "resub"]}})
    pairs = {(t.seed, t.update_rate, t.subscribers) for t in c.traces()}
    assert pairs == {(s, r, n) for s in (1, 2) for r, n in ((0, 800), (50, 800), (100, 800), (50, 400))}
    assert len(c.points()) == 2 * len(pairs)
    assert c.link_delay == 0.01 and c.service == "measured" and c.service_scale == 1.0
    slow = parse({"replay": {"workload": "htm", "service_scale": 10}})
    assert {p.service_scale for p in slow.points()} == {10.0}


@pytest.mark.parametrize("raw,message", [
    ({}, "needs a \\[replay\\] table"),
    ({"replay": {"workload": "nope"}}, "workload must be one of"),
    ({"replay": {"workload": "at", "modes": ["fast"]}}, "modes has 'fast'; allowed: parametric, resub"),
    ({"replay": {"workload": "at", "matchers": "fastint"}}, "matchers must be a non-empty list"),
    ({"replay": {"workload": "at", "update_rates": [-1]}}, "update_rates has -1; allowed: finite numbers >= 0"),
    ({"replay": {"workload": "at", "sevice": "model"}}, "unknown key\\(s\\) in \\[replay\\]: sevice"),
    ({"replay": {"workload": "at", "service": "wall"}}, "service must be"),
    ({"replay": {"workload": "at", "service_scale": 0}}, "service_scale must be a finite number > 0, not 0"),
    # the [workload] table is checked here, not in a Spark task (which printed a Java stack trace)
    ({"replay": {"workload": "at"}, "workload": {"duration": -1}}, "at: duration must be > 0, not -1"),
    ({"replay": {"workload": "at"}, "workload": {"duraton": 2}},
     "\\[workload\\] duraton: at has no such setting; it takes duration"),
    ({"replay": {"workload": "at"}, "workload": {"hf_share": 1.5}}, "hf_share must be >= 0 and <= 1"),
    ({"replay": {"workload": "htm"}, "workload": {"roads": 2.5}}, "htm: roads must be an integer"),
    ({"replay": {"workload": "micro"}, "workload": {"update_rate": 5}}, "set by the grid: use \\[replay\\] update_rates"),
    ({"replay": {"workload": "at", "subscribers": [0]}}, "at: subscribers must be >= 1, not 0"),
    # in range each, not together: an exchange without types failed in a Spark task (IndexError)
    ({"replay": {"workload": "at"}, "workload": {"publishers": 6, "types": 5}},
     "at: publishers \\(6\\) must be at most types \\(5\\)"),
    ({"replay": {"workload": "at"}, "workload": {"types": 3}}, "at: publishers \\(5\\) must be at most types \\(3\\)"),
])
def test_bad_configs_say_what_is_wrong(raw, message):
    with pytest.raises(ConfigError, match=message):
        parse(raw)


def test_a_missing_or_broken_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[replay\n")
    with pytest.raises(ConfigError, match="bad.toml"):
        load(bad)


def test_the_shipped_configs_parse():
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "examples" / "replay"
    names = sorted(p.name for p in root.glob("*.toml"))
    assert {"htm-small.toml", "at-small.toml", "htm-paper.toml"} <= set(names)
    for p in root.glob("*.toml"):
        load(p)


@pytest.mark.parametrize("key,value", [
    ("modes", ["parametric", "parametric"]),
    ("matchers", ["fastint", "fastint"]),
    ("seeds", [1, 2, 1]),
    ("subscribers", [20, 20]),
    ("update_rates", [0, 0.0]),  # the same rate written twice: one trace id
])
def test_a_value_listed_twice_is_refused(key, value):
    # two grid points with one id would merge their deliveries (duplicates at rate 0)
    with pytest.raises(ConfigError, match=f"^config: \\[replay\\] {key} lists .* twice; each value may appear once$"):
        parse({"replay": {"workload": "at", key: value}})


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize("replay,message", [
    ({"update_rates": [INF]}, r"\[replay\] update_rates has inf; allowed: finite numbers >= 0"),  # looped forever
    ({"update_rates": [NAN]}, r"\[replay\] update_rates has nan; allowed: finite numbers >= 0"),
    ({"subscribers_rate": -5}, r"\[replay\] subscribers_rate must be a finite number >= 0, not -5"),
    ({"subscribers_rate": "fast"}, r"\[replay\] subscribers_rate must be a finite number >= 0, not 'fast'"),
    ({"subscribers_rate": True}, r"\[replay\] subscribers_rate must be a finite number >= 0, not True"),
    ({"link_delay_ms": -10}, r"\[replay\] link_delay_ms must be a finite number >= 0, not -10"),
    ({"link_delay_ms": True}, r"\[replay\] link_delay_ms must be a finite number >= 0, not True"),
    ({"link_delay_ms": "ten"}, r"\[replay\] link_delay_ms must be a finite number >= 0, not 'ten'"),
    ({"service_scale": INF}, r"\[replay\] service_scale must be a finite number > 0, not inf"),
    ({"service_scale": True}, r"\[replay\] service_scale must be a finite number > 0, not True"),
    ({"seeds": [2**64 + 7]}, r"\[replay\] seeds has 18446744073709551623; allowed: integers from 0 to 2\*\*63 - 1"),
    ({"seeds": [-1]}, r"\[replay\] seeds has -1; allowed: integers from 0"),
])
def test_a_value_out_of_range_is_one_line_naming_the_key(replay, message):
    with pytest.raises(ConfigError, match=f"^config: {message}") as info:
        parse({"replay": {"workload": "at", **replay}})
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("raw,message", [
    ({"monitor": {"window": "1"}}, r"\[monitor\] window must be a finite number > 0, not '1'"),
    ({"monitor": {"freq_approx": INF}}, r"\[monitor\] freq_approx must be a finite number > 0, not inf"),
    ({"monitor": {"min_history": 4.5}}, r"\[monitor\] min_history must be an integer >= 4, not 4.5"),
    ({"workload": {"duration": INF}}, r"\[workload\] duration must be a finite number, not inf"),
    ({"worklaod": {"duration": 1}}, r"unknown table\(s\) worklaod; a replay file has \[replay\], \[workload\], "
                                    r"\[monitor\], \[live\]"),
    ({"moniter": {"window": 1}}, r"unknown table\(s\) moniter;"),
])
def test_other_tables_are_checked_too(raw, message):
    with pytest.raises(ConfigError, match=f"^config: {message}"):
        parse({"replay": {"workload": "at", "monitors": [True]}, **raw})


def test_toml_inf_and_a_directory_are_refused_when_read(tmp_path):
    inf = tmp_path / "inf.toml"
    inf.write_text('[replay]\nworkload = "micro"\nupdate_rates = [inf]\n')
    with pytest.raises(ConfigError, match="inf.toml: \\[replay\\] update_rates has inf"):
        load(inf)
    with pytest.raises(ConfigError, match=f"^{tmp_path}: is a directory; give a replay TOML file$"):
        load(tmp_path)


@pytest.mark.parametrize("replay,message", [
    # a wrong value says what would be right, not only what is wrong
    ({"seeds": ["1"]}, "\\[replay\\] seeds has '1'; allowed: integers$"),
    ({"subscribers": [3.5]}, "\\[replay\\] subscribers has 3.5; allowed: integers$"),
    ({"update_rates": [[0]]}, "\\[replay\\] update_rates has \\[0\\]; allowed: numbers$"),
    ({"update_rates": "10"}, "\\[replay\\] update_rates must be a non-empty list of numbers, not '10'$"),
    ({"modes": []}, "\\[replay\\] modes must be a non-empty list of parametric, resub, not \\[\\]$"),
    ({"matchers": [True]}, "\\[replay\\] matchers has True; allowed: naive, poset, fastint$"),
    ({"name": 5}, "\\[replay\\] name must be a non-empty string, not 5$"),
])
def test_a_value_of_the_wrong_type_is_told_with_what_is_allowed(replay, message):
    with pytest.raises(ConfigError, match=message):
        parse({"replay": {"workload": "micro", **replay}})


@pytest.mark.parametrize("monitors,message", [
    # [true, true] was accepted (deduplicated in silence) while every other axis refuses a repeat
    ([True, True], r"\[replay\] monitors lists True twice; each value may appear once$"),
    ([], r"\[replay\] monitors must be a non-empty list of true, false, not \[\]$"),
    (["yes"], r"\[replay\] monitors has 'yes'; allowed: true, false$"),
    (True, r"\[replay\] monitors must be a non-empty list of true, false, not True$"),
])
def test_the_monitors_axis_is_checked_as_the_others(monitors, message):
    with pytest.raises(ConfigError, match=f"^config: {message}"):
        parse({"replay": {"workload": "at", "monitors": monitors}})


@pytest.mark.parametrize("raw,message", [
    # each message names its table: "micro: duration must be > 0" did not say where the key was
    ({"workload": {"duration": -1.0}}, r"\[workload\] micro: duration must be > 0, not -1.0$"),
    ({"workload": {"publish_rate": "fast"}}, r"\[workload\] micro: publish_rate must be a number, not 'fast'$"),
    ({"replay": {"subscribers": [0]}}, r"\[replay\] subscribers has 0: micro: subscribers must be >= 1, not 0$"),
    ({"replay": {"service": "measure"}}, r"\[replay\] service must be 'measured', 'calibrated' or 'model', "
                                         r"not 'measure'$"),
    ({"replay": {"workload": "mikro"}}, r"\[replay\] workload must be one of micro, overlay-micro, htm, at, "
                                        r"not 'mikro'$"),
    ({"replay": {"monitors": [True]}, "monitor": {"windw": 1.0}},
     r"\[monitor\] unknown key\(s\) windw; it takes window, freq_approx and min_history$"),
])
def test_an_error_names_the_table_of_its_key(raw, message):
    replay = {"workload": "micro", **raw.get("replay", {})}
    with pytest.raises(ConfigError, match=f"^config: {message}"):
        parse({**raw, "replay": replay})


def test_a_misspelt_workload_setting_is_not_offered_keys_the_table_refuses():
    # the list offered subscribers and update_rate, which [workload] then refused ("set by the grid")
    with pytest.raises(ConfigError) as info:
        parse({"replay": {"workload": "micro"}, "workload": {"durration": 1.0}})
    text = str(info.value)
    assert text.startswith("config: [workload] durration: micro has no such setting; it takes ")
    offered = text.split("it takes ")[1].split(", ")
    assert "duration" in offered and "subscribers" not in offered and "update_rate" not in offered
