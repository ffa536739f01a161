# Written answers: `make` builds submission.pdf, `make clean` removes everything it made.
#
# Needs Python 3 with numpy and matplotlib (for the figures) and LaTeX from Debian's TeX Live:
#   apt-get install -y --no-install-recommends latexmk texlive-latex-base \
#       texlive-latex-recommended poppler-utils
#   pip install numpy matplotlib
# No network is used. latexmk runs pdflatex as often as needed; its auxiliary files are removed
# after a successful build (a failed build keeps submission.log for reading).

# the project's .venv (made by ./run.sh) when there is one, else python3
PYTHON ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
LATEXMK ?= latexmk
LATEXMK_FLAGS = -pdf -interaction=nonstopmode -halt-on-error -file-line-error

# One run of written/figures.py writes all of figures/; its last file stands for the whole set.
FIGURES_DONE = figures/spread_stats.tex

.PHONY: all figures clean

all: submission.pdf

figures: $(FIGURES_DONE)

$(FIGURES_DONE): written/figures.py written/checks.py
	$(PYTHON) written/figures.py

submission.pdf: submission.tex written/results.tex docs/attention.png $(FIGURES_DONE)
	$(LATEXMK) $(LATEXMK_FLAGS) submission.tex
	$(LATEXMK) -c submission.tex

clean:
	-$(LATEXMK) -C submission.tex
	rm -f submission.pdf submission.aux submission.log submission.out submission.fls \
	      submission.fdb_latexmk submission.synctex.gz
	rm -rf figures
