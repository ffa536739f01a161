# Written answers: `make` builds submission.pdf, `make clean` removes everything it made.
#
# Needs Python 3 with numpy and matplotlib (for the figures) and LaTeX from Debian's TeX Live:
#   apt-get install -y --no-install-recommends latexmk texlive-latex-base \
#       texlive-latex-recommended poppler-utils
#   pip install numpy matplotlib
# No network is used. latexmk runs pdflatex as often as needed, quietly, in a fresh .latex-build/;
# the PDF is moved into place only when the build succeeds, so a failed or interrupted build leaves the
# previous submission.pdf as it was. The first pass's "undefined reference" warnings are normal and go
# unshown; a warning still there in the last pass is printed, and a failed build prints LaTeX's
# file:line: error, or the engine's own (`!pdfTeX error: ...`, a full disk), else the log's last lines (the
# whole log stays in .latex-build/ for reading).

# the first of the project's .venv (made by ./run.sh) and python3 that has numpy and matplotlib
PYTHON ?= $(firstword $(foreach p,$(wildcard .venv/bin/python) python3,$(if $(shell $(p) -c "import numpy, matplotlib" 2>/dev/null && echo ok),$(p))) python3)
LATEXMK ?= latexmk
LATEXMK_FLAGS = -pdf -silent -interaction=nonstopmode -halt-on-error -file-line-error

BUILD = .latex-build
# What written/figures.py writes, all in one run; its last file stands for the whole set.
FIGURE_FILES = figures/spread.pdf figures/temperature.pdf figures/spread_stats.tex
FIGURES_DONE = $(lastword $(FIGURE_FILES))

.PHONY: all figures clean

all: submission.pdf

figures: $(FIGURES_DONE)

$(FIGURES_DONE): written/figures.py written/checks.py
	@$(PYTHON) -c "import numpy, matplotlib" 2>/dev/null || { command -v $(PYTHON) >/dev/null 2>&1 || { \
	  echo "make: no program $(PYTHON) (a path with a space is given quoted: make PYTHON=\"'/path/to/python'\")" >&2; \
	  exit 2; }; echo "make: $(PYTHON) lacks numpy or matplotlib;" \
	  "install them ($(PYTHON) -m pip install numpy matplotlib), or give make PYTHON=... one that has them" \
	  "(./run.sh test installs both, into .venv where it makes one)" >&2; exit 2; }
	$(PYTHON) written/figures.py

submission.pdf: submission.tex written/results.tex docs/attention_last.png $(FIGURES_DONE)
	@command -v $(LATEXMK) >/dev/null 2>&1 || { echo "make: no $(LATEXMK) (LaTeX); install it: apt-get install" \
	  "latexmk texlive-latex-base texlive-latex-recommended (the list CI uses: .ci/apt-packages.txt)" >&2; exit 2; }
	@[ -w . ] || { echo "make: this folder is not writable, and LaTeX writes $(BUILD)/ and submission.pdf in" \
	  "it; make it writable (chmod u+w .), or build in a writable copy" >&2; exit 2; }
	@rm -rf $(BUILD)
	@$(LATEXMK) $(LATEXMK_FLAGS) -outdir=$(BUILD) submission.tex >/dev/null || { \
	  if [ -f $(BUILD)/submission.log ]; then grep -A2 -E '^([^ ]+\.(tex|sty|cls):[0-9]+: |!)' \
	    $(BUILD)/submission.log >&2 || tail -n 8 $(BUILD)/submission.log >&2; \
	  echo "make: LaTeX stopped at the error above (the whole log: $(BUILD)/submission.log);" \
	  "submission.pdf is as it was" >&2; else echo "make: $(LATEXMK) stopped before LaTeX ran (its message" \
	  "above; is pdflatex installed? apt-get install texlive-latex-base); submission.pdf is as it was" >&2; fi; \
	  exit 1; }
	@! grep -E '^(LaTeX|Package [a-zA-Z]+) Warning' $(BUILD)/submission.log >&2 || echo "make: the" \
	  "warnings above are from LaTeX's last pass ($(BUILD)/submission.log)" >&2
	@mv -f $(BUILD)/submission.pdf submission.pdf
	@rm -rf $(BUILD)
	@echo "make: wrote submission.pdf"

# What make made, and nothing else: a file of the user's in figures/ stays (and so does the folder).
# The LaTeX files beside submission.tex are those of builds before .latex-build/.
clean:
	rm -rf $(BUILD)
	rm -f submission.pdf submission.aux submission.log submission.out submission.fls \
	      submission.fdb_latexmk submission.synctex.gz
	rm -f $(FIGURE_FILES) $(addsuffix .tmp,$(FIGURE_FILES))
	@rmdir figures 2>/dev/null || true
