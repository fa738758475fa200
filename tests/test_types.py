"""The records that cross module boundaries: an ingest's report and progress."""

from __future__ import annotations

from assistant.types import MAX_LISTED_REJECTIONS, IngestProgress, IngestReport, Rejected


def test_a_report_lists_the_first_rejections_and_counts_the_rest() -> None:
    report = IngestReport()
    for n in range(MAX_LISTED_REJECTIONS + 5):
        report.reject(Rejected("baseline.xml.gz", None, f"article {n}: no abstract"))
    assert len(report.rejected) == MAX_LISTED_REJECTIONS and report.rejected_count == MAX_LISTED_REJECTIONS + 5
    summary = report.summary()
    assert f"rejected {MAX_LISTED_REJECTIONS + 5} records" in summary
    assert summary.endswith(f"… and 5 more rejected records (only the first {MAX_LISTED_REJECTIONS} are listed)")


def test_progress_tells_the_file_the_pace_and_the_time_left() -> None:
    progress = IngestProgress(files_total=1300, bytes_total=13_000, files_done=10, bytes_done=100,
                              records=30_000, added=20_000, seconds=60.0)
    assert progress.line() == "file 11 of 1,300 · 20,000 added · 500 records/s · about 2 h 9 min left"
    assert progress.fraction == 100 / 13_000
    assert IngestProgress(files_total=2, bytes_total=10).line() == "file 1 of 2 · 0 added · 0 records/s"  # no pace yet
    almost = IngestProgress(files_total=2, bytes_total=100, files_done=1, bytes_done=99, seconds=30.0)
    assert almost.line().endswith("under a minute left")
    finished = IngestProgress(files_total=2, bytes_total=100, files_done=2, bytes_done=100, records=9, seconds=3.0)
    assert finished.line() == "2 files · 0 added · 3 records/s" and finished.fraction == 1.0
