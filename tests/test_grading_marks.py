"""The pass-mark table (course or embedded) an accuracy test applies, where data/ is not the embedded corpus."""
import shutil

import grader


def test_a_copy_of_replaced_data_is_not_the_embedded_corpus(tmp_path, monkeypatch):
    """The course's files copied into src/data/ (data/) and also kept in the course's own folder: graded with
    --data-dir at that folder, they are the course's corpus, as data/ is, not the embedded one (its lower
    synthesizer marks would pass 4.4% on the course's dev set)."""
    data = tmp_path / "data"
    shutil.copytree(grader.DEFAULT_DATA_DIR, data)
    monkeypatch.setattr(grader, "DEFAULT_DATA_DIR", str(data))
    course = tmp_path / "course"
    course.mkdir()
    for name in grader.EMBEDDED_FILES:  # the course's files (here: other text), in both folders
        (course / name).write_text("Where was Ada Quill born?\tLima\n", encoding="utf-8")
        shutil.copy(course / name, data / name)
    assert grader.which_corpus(str(data)) == "course"
    assert grader.which_corpus(str(course)) == "course"
