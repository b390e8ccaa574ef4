import subprocess
import sys


def test_demo_runs_and_prints_the_comparison():
    out = subprocess.run([sys.executable, "-m", "eventpy", "demo", "--subscribers", "20", "--span", "0.1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "stocks.Quote(firm='IBM', price=9.5)" in out.stdout
    assert "parametric" in out.stdout and "resub" in out.stdout and "ratio p/r" in out.stdout


def test_unknown_command_is_a_usage_error():
    out = subprocess.run([sys.executable, "-m", "eventpy", "fly"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_a_failed_spark_job_is_reported_as_its_python_error():
    from eventpy.replay.cli import _python_error

    spark_error = (
        "An error occurred while calling o62.parquet.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: ...\n"
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "/x/worker.py", line 1247, in main\n    process()\n'
        '  File "/x/at.py", line 73, in price_at\n    return mid[et][i]\n'
        "IndexError: list index out of range\n\n"
        "\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(...)\n"
        "\tat java.base/java.lang.Thread.run(Thread.java:840)\n")
    assert _python_error(spark_error) == "IndexError: list index out of range"
    assert _python_error("Py4JError: no traceback here") == ""
