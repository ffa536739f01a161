"""Sentence templates, occupations and the other bits that write one biography line.

A biography is a handful of sentences. For an answerable person exactly one sentence states the
birthplace, with one of many templates: some put it first ("Born in X, ..."), some last
("... although she was born in X"), some say it indirectly ("A native of X", "X-born"). The other
sentences mention other places (studied in, worked in, lived in, died in) so that a reader has
to bind "born" to the right one. An unanswerable person gets no birth sentence at all.

Templates are `str.format` strings over the fields below; a field is computed on first use
(`Fields.__missing__`), so a template only draws what it shows. Flags on a template:
`d` dead people only, `a` living people only, `c` birthplace must be a city, `f` only as the
first sentence, `m` never as the first sentence, `s` scholars and writers only.
"""

# ----------------------------------------------------------------------------- vocabulary

# (singular, plural, category); "x|y" gives a male|female form
OCCUPATIONS = [
    ("painter", "painters", "art"), ("sculptor", "sculptors", "art"),
    ("photographer", "photographers", "art"), ("architect", "architects", "art"),
    ("illustrator", "illustrators", "art"), ("printmaker", "printmakers", "art"),
    ("potter", "potters", "art"), ("cartoonist", "cartoonists", "art"),
    ("composer", "composers", "music"), ("pianist", "pianists", "music"),
    ("violinist", "violinists", "music"), ("singer", "singers", "music"),
    ("conductor", "conductors", "music"), ("guitarist", "guitarists", "music"),
    ("organist", "organists", "music"), ("jazz trumpeter", "jazz trumpeters", "music"),
    ("opera singer", "opera singers", "music"), ("cellist", "cellists", "music"),
    ("songwriter", "songwriters", "music"),
    ("writer", "writers", "letters"), ("novelist", "novelists", "letters"),
    ("poet", "poets", "letters"), ("journalist", "journalists", "letters"),
    ("playwright", "playwrights", "letters"), ("translator", "translators", "letters"),
    ("essayist", "essayists", "letters"), ("historian", "historians", "letters"),
    ("literary critic", "literary critics", "letters"), ("editor", "editors", "letters"),
    ("children's author", "children's authors", "letters"),
    ("actor", "actors", "stage"), ("dancer", "dancers", "stage"),
    ("film director", "film directors", "stage"), ("screenwriter", "screenwriters", "stage"),
    ("comedian", "comedians", "stage"), ("choreographer", "choreographers", "stage"),
    ("television presenter", "television presenters", "stage"),
    ("physicist", "physicists", "science"), ("chemist", "chemists", "science"),
    ("mathematician", "mathematicians", "science"), ("biologist", "biologists", "science"),
    ("botanist", "botanists", "science"), ("astronomer", "astronomers", "science"),
    ("geologist", "geologists", "science"), ("economist", "economists", "science"),
    ("engineer", "engineers", "science"), ("physician", "physicians", "science"),
    ("surgeon", "surgeons", "science"), ("psychologist", "psychologists", "science"),
    ("linguist", "linguists", "science"), ("archaeologist", "archaeologists", "science"),
    ("philosopher", "philosophers", "science"), ("zoologist", "zoologists", "science"),
    ("ornithologist", "ornithologists", "science"), ("statistician", "statisticians", "science"),
    ("footballer", "footballers", "sport"), ("cricketer", "cricketers", "sport"),
    ("cyclist", "cyclists", "sport"), ("boxer", "boxers", "sport"), ("rower", "rowers", "sport"),
    ("tennis player", "tennis players", "sport"), ("swimmer", "swimmers", "sport"),
    ("rugby player", "rugby players", "sport"),
    ("ice hockey player", "ice hockey players", "sport"),
    ("chess player", "chess players", "sport"), ("sprinter", "sprinters", "sport"),
    ("fencer", "fencers", "sport"), ("wrestler", "wrestlers", "sport"),
    ("basketball player", "basketball players", "sport"), ("mountaineer", "mountaineers", "sport"),
    ("politician", "politicians", "politics"), ("diplomat", "diplomats", "politics"),
    ("lawyer", "lawyers", "politics"), ("judge", "judges", "politics"),
    ("trade unionist", "trade unionists", "politics"),
    ("civil servant", "civil servants", "politics"),
    ("activist", "activists", "politics"), ("economic adviser", "economic advisers", "politics"),
    ("businessman|businesswoman", "business people", "business"), ("banker", "bankers", "business"),
    ("industrialist", "industrialists", "business"), ("merchant", "merchants", "business"),
    ("publisher", "publishers", "business"), ("shipbuilder", "shipbuilders", "business"),
    ("brewer", "brewers", "business"), ("inventor", "inventors", "business"),
    ("restaurateur", "restaurateurs", "business"),
    ("bishop", "bishops", "religion"), ("rabbi", "rabbis", "religion"),
    ("missionary", "missionaries", "religion"), ("theologian", "theologians", "religion"),
    ("priest|nun", "clergy", "religion"),
    ("soldier", "soldiers", "military"), ("naval officer", "naval officers", "military"),
    ("pilot", "pilots", "military"), ("army officer", "army officers", "military"),
]

# parents' and relatives' trades (no categories needed)
TRADES = ["baker", "carpenter", "schoolteacher", "tailor", "farmer", "doctor", "shopkeeper",
          "miner", "railway clerk", "fisherman", "watchmaker", "pharmacist", "blacksmith",
          "printer", "sailor", "nurse", "seamstress", "lawyer", "minister", "mill worker",
          "bookseller", "cabinet maker", "postman", "wine merchant", "stonemason", "grocer"]

ADJECTIVES = ["prolific", "celebrated", "self-taught", "award-winning", "influential",
              "little-known", "versatile", "pioneering", "respected", "popular", "eccentric",
              "controversial", "much-travelled", "largely forgotten", "successful"]

FIELDS_OF_STUDY = ["law", "medicine", "music", "philosophy", "chemistry", "physics",
                   "mathematics", "architecture", "history", "economics", "engineering",
                   "painting", "theology", "botany", "journalism", "classics", "linguistics",
                   "agriculture", "political science", "art history", "geology", "drama",
                   "literature", "astronomy", "sculpture", "zoology", "accounting"]

TOPICS = ["the history of printing", "river ecology", "number theory", "early opera",
          "labour law", "bird migration", "glacial geology", "medieval trade",
          "crystal structures", "folk music", "urban planning", "tropical diseases",
          "public finance", "ancient coins", "child psychology", "the physics of sound",
          "coastal erosion", "railway history", "moss and lichen", "the ethics of war",
          "early photography", "sea shells", "the history of mapmaking", "rare manuscripts",
          "village life", "industrial chemistry", "dialects", "the working class",
          "stellar spectra", "pest control", "prison reform", "water supply"]

# invented titles; some are questions, so that "?" occurs in the corpus as it does in questions
TITLES = ["The Glass Orchard", "Winter Lanterns", "Salt and Cedar", "A Map of Small Rivers",
          "Who Keeps the Lighthouse?", "The Quiet Engine", "Letters to a Stranger",
          "Why Do Rivers Bend?", "North of Nowhere", "The Clockmaker's Daughter",
          "Is It Raining Yet?", "Borrowed Light", "The Ninth Wave", "Paper Boats",
          "What the Crow Said", "A House of Many Doors", "The Long Summer", "Iron and Lace",
          "Where Did the Music Go?", "The Last Tram", "Red Earth", "Songs for a Harbour",
          "The Orchard Keeper's Son", "Seven Bridges", "Half a Sky", "The Silent Valley",
          "Who Was Anna Brandt?", "The Weight of Snow", "Small Mercies", "The Copper Kettle",
          "A Season of Ash", "The Night Ferry", "Crossing the Plain", "Dust and Honey",
          "What Remains?", "The Blue Hour", "A Grammar of Birds", "Under the Lime Trees",
          "The Stone Garden", "Notes from the Attic", "Can Machines Dream?", "The Tin Drummer",
          "Common Ground", "The River Below", "Morning in the Mill"]

WORK_KINDS = {"art": ["painting", "series of etchings", "mural", "portrait"],
              "music": ["symphony", "song cycle", "opera", "string quartet", "album"],
              "letters": ["novel", "poetry collection", "memoir", "play", "essay"],
              "stage": ["film", "play", "television series", "documentary"],
              "science": ["textbook", "monograph", "paper"],
              "other": ["memoir", "book"]}

AWARDS = ["a national book prize", "an honorary doctorate", "a lifetime achievement award",
          "a gold medal for bravery", "a state prize", "the freedom of a city",
          "a knighthood", "a royal medal", "a travelling scholarship", "a silver medal",
          "a prize for young artists", "an order of merit"]

ORGS = ["a trade union", "a chamber orchestra", "a national academy", "the civil service",
        "a travelling circus", "the merchant navy", "a local newspaper", "a shipping company",
        "a theatre company", "the foreign service", "a choir", "a mountaineering club",
        "a socialist party", "a conservative party", "a railway company", "a research institute"]

INSTITUTIONS = ["the Academy of Fine Arts", "the Polytechnic", "the Conservatory",
                "the School of Medicine", "the Technical University", "the Institute of Art",
                "the Naval Academy", "the Teachers' College", "the Law School",
                "the School of Mines"]

CLUB_SUFFIXES = ["United", "City", "Rovers", "Athletic", "Wanderers", "FC", "Sporting Club",
                 "Albion"]

# (war, year it began): a person only serves in or settles after a war of their adult life
WARS = [("the Crimean War", 1853), ("the American Civil War", 1861),
        ("the Franco-Prussian War", 1870), ("the Boer War", 1899), ("the First World War", 1914),
        ("the Spanish Civil War", 1936), ("the Second World War", 1939), ("the Korean War", 1950),
        ("the Vietnam War", 1965), ("the Falklands War", 1982), ("the Gulf War", 1990)]

CAUSES = ["women's suffrage", "workers' rights", "the abolition of slavery", "land reform",
          "clean air", "public libraries", "free schooling", "the rights of prisoners",
          "animal welfare", "peace"]

GAMES = ["Olympic Games", "World Championships", "Commonwealth Games", "European Championships"]

QUALITIES = ["generosity", "sharp wit", "temper", "courage", "patience", "modesty",
             "stubbornness", "elegant handwriting"]

BUILDINGS = ["a railway station", "a concert hall", "a town hall", "a public library",
             "a hospital", "a bridge", "a cathedral", "a school", "a museum"]

RELATIVES_M = ["brother", "cousin", "nephew", "uncle", "grandson"]
RELATIVES_F = ["sister", "cousin", "niece", "aunt", "granddaughter"]

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
NUMBER_WORDS = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten", "eleven", "twelve"]
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]

# ----------------------------------------------------------------------------- templates

# Birth sentences: (weight, flags, text). They are the only templates that show {B}.
BIRTH = [
    (10, "", "{Subj} was born in {B} in {Y}."),
    (6, "", "{Subj} was born in {B} on {D}."),
    (5, "f", "{N} (born {D} in {B}) {be} {a_occ}."),
    (4, "fd", "{N} ({D} {B} - {DD} {X1}) was {a_occ}."),
    (3, "fd", "{N} ({Y}, {B} - {YD}, {X1}) was {a_adj_occ}."),
    (3, "f", "{N} (born {Y}, {B}) {be} {a_occ}."),
    (7, "", "Born in {B}, {S} {vp}."),
    (3, "", "Born in {B} in {Y}, {S} {vp}."),
    (4, "", "A native of {B}, {S} {vp}."),
    (3, "f", "{B_}-born {occ} {N} {vp}."),
    (5, "f", "{N} {be} {a_occ} from {B}."),
    (3, "f", "{N} {be} {a_occ} who was born in {B}."),
    (4, "", "{Subj} was born at {B} on {D}."),
    (4, "", "{Subj} was born and raised in {B}."),
    (3, "", "{Subj} was born in {B} to a family of {trades}."),
    (3, "", "{Subj} was born in {B}, the {nth_of_n} children."),
    (3, "", "The {rel} of {a_trade}, {S} was born in {B} in {Y}."),
    (3, "f", "{N}, who was born in {B} in {Y}, {vp}."),
    (2, "c", "{Subj} was born in the city of {B}."),
    (3, "", "{Subj} was born in {Y} in {B}."),
    (2, "", "{Subj} hails from {B}."),
    (4, "", "{Subj} grew up in {X1}, although {p} was born in {B}."),
    (3, "", "{Subj} moved to {X1} as a child, having been born in {B} in {Y}."),
    (2, "", "Though {pos} family lived in {X1}, {S} was born in {B}."),
    (3, "", "{Subj} studied in {C1} and worked in {X2}, but {p} was born in {B}."),
    (2, "", "{Subj} spent most of {pos} life in {X1}, but {pos} birthplace was {B}."),
    (3, "f", "{N} {be} {a_occ} based in {X1}; {p} was born in {B}."),
    (2, "", "Before settling in {X1}, {S} had been born and educated in {B}."),
    (2, "d", "{Subj} died in {X1} in {YD}, far from {pos} native {B}."),
    (2, "", "{Subj} was born of {parents} parents in {B}."),
    (2, "", "{Subj} originally came from {B}."),
    (2, "f", "{N}, {a_occ} born in {B}, {vp}."),
    (3, "", "{Subj} was born on {D} in {B} and later moved to {X1}."),
    (2, "m", "{Pos} parents were living in {B} when {p} was born in {Y}."),
    (2, "f", "{N} {be} {a_B} native who {vp}."),
    (2, "m", "{Pos} birthplace was {B}."),
]

# Verb phrases for "Born in X, Surname <vp>." (past tense)
VPS = [
    "became {a_occ} in {y1}", "began {pos} career in {X1}",
    "studied {field} at the University of {C1}", "moved to {X1} in {y1}",
    "worked as {a_occ} for many years", "emigrated to {A1} with {pos} parents",
    "trained in {C1} before turning to {field}", "was educated in {C1}",
    "spent {pos} childhood in {X1}", "joined {org} in {y1}",
    "first worked as {a_trade} in {X1}", "settled in {C1} after {war}",
    "made {pos} name in {X1} as {a_occ}", "left home at {age2} to study in {C1}",
]

# First sentences of lines whose birth sentence comes later (or never).
INTRO = [
    (8, "", "{N} {be} {a_occ}."),
    (5, "", "{N} {be} {a_occ} and {occ2}."),
    (4, "d", "{N} ({Y} - {YD}) was {a_adj_occ}."),
    (3, "a", "{N} (born {Y}) is {a_occ}."),
    (5, "", "{N} {be} {a_occ} based in {X1}."),
    (4, "", "{N} {be} {a_occ} who worked mainly in {X1}."),
    (3, "s", "{N} {be} {a_adj_occ} known for {pos} work on {topic}."),
    (3, "d", "{N} was {a_occ} active in {C1} from the {decade}s."),
    (3, "", "{N} {be} {a_adj_occ}."),
    (2, "d", "{N} was {a_occ} who spent most of {pos} life in {X1}."),
]

# Body sentences: category (or "any"), weight, flags, text.
BODY = [
    # education
    ("any", 5, "", "{Subj} studied {field} at the University of {C1}."),
    ("any", 3, "", "{Subj} was educated in {C1} and {C2}."),
    ("any", 3, "", "{Subj} trained as {a_occ} in {C1} before moving to {X2}."),
    ("any", 3, "", "{Subj} graduated from {inst} in {C1} in {y1}."),
    ("any", 2, "",
     "{Subj} attended school in {C1}, where a teacher encouraged {pos} interest in {field}."),
    # moving and living
    ("any", 5, "", "In {y1}, {p} moved to {X1}."),
    ("any", 3, "", "In {y1} {p} moved to {X1}, where {p} joined {org}."),
    ("any", 4, "", "{Subj} lived in {X1} for many years."),
    ("any", 3, "", "{Subj} settled in {C1} in {y2}."),
    ("any", 3, "", "{Pos} family moved to {X1} when {p} was {age}."),
    ("any", 4, "", "{Subj} grew up in {X1}."),
    ("any", 2, "", "{Subj} spent {pos} childhood in {X1} and {X2}."),
    ("any", 3, "", "{Subj} emigrated to {A1} in {y1}."),
    ("any", 2, "", "{Subj} later returned to {X1}."),
    ("any", 3, "a", "{Subj} currently lives in {X1}."),
    ("any", 2, "a", "{Subj} divides {pos} time between {C1} and {C2}."),
    ("any", 2, "a", "{Subj} is based in {C1}."),
    # work
    ("any", 4, "", "{Subj} worked in {X1} as {a_occ2} from {y1} to {y2}."),
    ("any", 3, "", "{Subj} began {pos} career in {X1} in {y1}."),
    ("any", 2, "", "From {y1} to {y2} {p} taught at a school in {C1}."),
    ("any", 2, "", "{Subj} spent {nyears} years working in {X1}."),
    ("any", 2, "", "{Subj} also worked as {a_occ2}."),
    ("any", 2, "d", "{Subj} retired in {y3}."),
    # family
    ("any", 3, "", "{Subj} married {spouse} in {y2}; they had {nkids} children."),
    ("any", 2, "", "{Subj} was the {nth_of_n} children of {a_trade}."),
    ("any", 2, "", "{Pos} father was {a_trade} and {pos} mother {a_trade2}."),
    ("any", 2, "", "{Subj} {be} the {relative} of the {occ3} {other}."),
    # death
    ("any", 6, "d", "{Subj} died in {X1} in {YD}."),
    ("any", 3, "d", "{Subj} died in {X1} on {DD} at the age of {agedeath}."),
    ("any", 2, "d", "{Subj} died at {pos} home in {C1}."),
    ("any", 2, "d", "{Subj} spent {pos} last years in {X1}."),
    ("any", 2, "d", "{Subj} is buried in {C1}."),
    ("any", 2, "d", "{Subj} died in {YD}."),
    # honours and other things
    ("any", 3, "", "{Subj} received {award} in {y2}."),
    ("any", 2, "", "In {y2} {p} was awarded {award}."),
    ("any", 1, "", "{Pos} papers are kept in a library in {C1}."),
    ("any", 1, "d", "A street in {C1} is named after {obj}."),
    ("any", 1, "", "{Subj} spoke {nlang} languages."),
    ("any", 1, "", "{Subj} was known for {pos} {quality}."),
    ("any", 1, "", "{Subj} once asked a reporter in {C1}: \"{question}\""),
    ("any", 2, "", "{Subj} travelled widely in {X1} and {X2}."),
    ("any", 2, "", "Like many {occs} of {pos} generation, {p} spent some years in {X1}."),
    # art
    ("art", 3, "", "{Pos} paintings hang in galleries in {C1} and {C2}."),
    ("art", 3, "", "{Subj} held {pos} first exhibition in {C1} in {y1}."),
    ("art", 2, "", "{Pos} work has been shown in {X1}, {X2} and {X3}."),
    ("art", 2, "", "{Subj} designed {building} in {C1}."),
    ("art", 2, "", "{Pos} best-known {work_kind} is \"{title}\"."),
    # music
    ("music", 3, "", "{Subj} studied at the conservatory in {C1}."),
    ("music", 2, "", "{Subj} recorded {nsmall} albums."),
    ("music", 3, "", "{Pos} {work_kind} \"{title}\" was first performed in {C1} in {y2}."),
    ("music", 2, "", "{Subj} toured {X1} and {X2} in {y2}."),
    ("music", 2, "", "{Subj} played in orchestras in {C1} and {C2}."),
    # letters
    ("letters", 3, "", "{Subj} wrote {nsmall} novels, among them \"{title}\"."),
    ("letters", 3, "", "{Pos} first book, \"{title}\", appeared in {y1}."),
    ("letters", 2, "", "{Subj} worked as a reporter in {C1}."),
    ("letters", 2, "",
     "{Pos} {y2} {work_kind} \"{title}\" was translated into {nsmall} languages."),
    ("letters", 2, "", "{Subj} edited a literary magazine in {C1}."),
    # stage
    ("stage", 3, "", "{Subj} appeared in more than {nbig} films."),
    ("stage", 3, "", "{Subj} made {pos} stage debut in {C1} in {y1}."),
    ("stage", 2, "", "{Pos} {work_kind} \"{title}\" was shown at a festival in {C1}."),
    ("stage", 2, "", "{Subj} toured {X1} with a theatre company."),
    # science
    ("science", 3, "", "{Subj} taught {field} at the University of {C1}."),
    ("science", 3, "", "{Subj} earned a doctorate from the University of {C1} in {y1}."),
    ("science", 3, "", "{Subj} is known for {pos} work on {topic}."),
    ("science", 2, "", "{Subj} was elected to a learned society in {y2}."),
    ("science", 2, "", "{Subj} did research in {X1} and {X2}."),
    ("science", 1, "", "{Pos} {work_kind} \"{title}\" appeared in {y2}."),
    # sport
    ("sport", 4, "", "{Subj} played for {club} from {y1} to {y2}."),
    ("sport", 3, "", "{Subj} represented {K1} at the {games} in {y2}."),
    ("sport", 2, "", "{Subj} began {pos} career at {club}."),
    ("sport", 2, "", "{Subj} won {nsmall} national titles."),
    ("sport", 2, "", "{Subj} later coached {club}."),
    # politics
    ("politics", 3, "", "{Subj} was elected mayor of {C1} in {y2}."),
    ("politics", 2, "", "{Subj} served as ambassador to {A1} from {y1} to {y2}."),
    ("politics", 3, "", "{Subj} sat in parliament from {y1} to {y2}."),
    ("politics", 2, "", "{Subj} practised law in {C1}."),
    ("politics", 2, "", "{Subj} campaigned for {cause}."),
    # business
    ("business", 3, "", "{Subj} founded a {firm} in {C1} in {y1}."),
    ("business", 2, "", "{Pos} company opened offices in {C1} and {C2}."),
    ("business", 2, "", "{Subj} made {pos} fortune in {X1}."),
    # religion
    ("religion", 3, "", "{Subj} was ordained in {C1} in {y1}."),
    ("religion", 2, "", "{Subj} served as a missionary in {A1}."),
    ("religion", 2, "", "{Subj} wrote on {topic} and prayer."),
    # military
    ("military", 3, "", "{Subj} served in {war}."),
    ("military", 2, "", "{Subj} commanded a garrison in {C1}."),
    ("military", 2, "", "{Subj} was wounded near {C1} in {y2}."),
]

FIRMS = ["shipping firm", "bank", "brewery", "publishing house", "printing works",
         "department store", "textile mill", "trading company", "coffee house", "engineering works"]

QUESTIONS = ["Who reads poetry any more?", "Why should I stop?", "What is a city without trees?",
             "Is there anything left to invent?", "Who decides what is art?",
             "Where else would I go?", "Where has the snow been?"]

PARENT_ADJECTIVES = ["immigrant", "working-class", "wealthy", "poor", "Catholic", "Jewish",
                     "Protestant", "Quaker", "farming", "musical", "aristocratic"]


# country names that take "the" in running text (the label stays without it)
THE_PLACES = {"United States", "Dominican Republic"}
REUSE_PLACE = 0.2   # chance that a sentence mentions a place the biography already named


def display(place):
    return "the " + place if place in THE_PLACES else place


class Skip(Exception):
    """A template asked for something this person cannot have (e.g. a country when none exists)."""


def article(word):
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


class Fields(dict):
    """The fields of one sentence; computed on first use and then fixed for the sentence."""

    def __init__(self, bio, first):
        super().__init__()
        self.bio = bio
        self.first = first
        self.places = []

    def __missing__(self, key):
        value = self.bio.field(key, self)
        self[key] = value
        return value


class Bio:
    """Writes the biography of one person; `places` draws other places for this person."""

    def __init__(self, rng, person, places, is_country, spouse_name, other_name, full_names=False):
        self.rng = rng
        self.p = person
        self.full_names = full_names  # name the person in full wherever the surname would stand
        self.places = places          # callable(kind) -> a new place name, or None
        self.is_country = is_country  # callable(name) -> bool
        self.mentioned = []           # (name, kind) of the other places drawn so far
        self.spouse_name = spouse_name
        self.other_name = other_name
        occ = rng.choice(OCCUPATIONS)
        self.category = occ[2]
        same = [o for o in OCCUPATIONS if o[2] == self.category and o is not occ]
        self.occ = self._gendered(occ[0])
        self.occ_plural = occ[1]
        self.occ2 = self._gendered(rng.choice(same)[0])
        self.other_occ = self._gendered(rng.choice(OCCUPATIONS)[0])
        # years: birth, career, death
        r = rng.random()
        if r < 0.25:
            self.year = rng.randint(1800, 1899)
        elif r < 0.72:
            self.year = rng.randint(1900, 1949)
        else:
            self.year = rng.randint(1950, 1999)
        if self.year < 1925:
            dead = True
        elif self.year < 1960:
            dead = rng.random() < 0.45
        else:
            dead = rng.random() < 0.05
        self.dead = dead
        if dead:
            lo, hi = self.year + 30, min(self.year + 96, 2022)
            self.death_year = rng.randint(min(lo, hi), hi)
            if self.death_year <= self.year + 20:
                self.death_year = min(self.year + 25, 2022)
        else:
            self.death_year = None
        end = self.death_year if dead else 2023
        self.y1 = min(self.year + rng.randint(17, 32), end - 1)
        self.y2 = min(self.y1 + rng.randint(2, 25), end)
        self.y3 = min(self.year + rng.randint(55, 72), end)

    def _place(self, kind, f):
        """Another place for sentence f: sometimes one this biography already mentioned (not in
        this sentence), otherwise a new one; raises Skip when none of this kind exists."""
        earlier = [name for name, k in self.mentioned
                   if name not in f.places and (kind == "any" or k == kind)]
        if kind == "abroad":
            earlier = []
        if earlier and self.rng.random() < REUSE_PLACE:
            name = self.rng.choice(earlier)
        else:
            name = self.places(kind)
            if name is None:
                raise Skip(kind)
            self.mentioned.append((name, "country" if self.is_country(name) else "city"))
        f.places.append(name)
        return name

    def _gendered(self, word):
        male, _, female = word.partition("|")
        return female if (female and self.p.name.female) else male

    def _date(self, year):
        return f"{self.rng.randint(1, 28)} {self.rng.choice(MONTHS)} {year}"

    # -- fields
    def field(self, key, f):
        rng, person = self.rng, self.p
        female = person.name.female
        if key == "N":
            return person.name.full
        family = person.name.full if self.full_names else person.name.family
        if key == "S":
            return family
        if key == "Subj":
            if f.first:
                return person.name.full if rng.random() < 0.7 else family
            return family if rng.random() < 0.4 else ("she" if female else "he")
        if key == "p":
            return "she" if female else "he"
        if key == "Pos":
            return "Her" if female else "His"
        if key == "pos":
            return "her" if female else "his"
        if key == "obj":
            return "her" if female else "him"
        if key == "rel":
            return "daughter" if female else "son"
        if key == "be":
            return "was" if self.dead else "is"
        if key == "B":
            return display(person.birthplace)
        if key == "B_":  # the birthplace where "the United States" would not read well
            if person.birthplace in THE_PLACES:
                raise Skip(key)
            return person.birthplace
        if key == "a_B":
            if person.birthplace in THE_PLACES:
                raise Skip(key)
            return article(person.birthplace)
        if key[0] in "XCKA" and key[1:].isdigit():
            kinds = {"X": "any", "C": "city", "K": "country", "A": "abroad"}
            return display(self._place(kinds[key[0]], f))
        if key == "occ":
            return self.occ
        if key == "a_occ":
            return article(self.occ)
        if key == "occs":
            return self.occ_plural
        if key == "occ2":
            return self.occ2
        if key == "a_occ2":
            return article(self.occ2)
        if key == "occ3":
            return self.other_occ
        if key == "a_adj_occ":
            return article(f"{rng.choice(ADJECTIVES)} {self.occ}")
        if key == "Y":
            return str(self.year)
        if key == "D":
            return self._date(self.year)
        if key in ("YD", "DD", "agedeath"):
            if not self.dead:
                raise Skip(key)
            if key == "YD":
                return str(self.death_year)
            if key == "DD":
                return self._date(self.death_year)
            return str(self.death_year - self.year)
        if key == "y1":
            return str(self.y1)
        if key == "y2":
            return str(self.y2)
        if key == "y3":
            return str(self.y3)
        if key == "decade":
            return str((self.y1 // 10) * 10)
        if key == "age":
            return str(rng.randint(2, 14))
        if key == "age2":
            return str(rng.randint(15, 19))
        if key == "nth_of_n":
            n = rng.randint(2, 9)
            return f"{ORDINALS[rng.randint(0, min(n, len(ORDINALS)) - 1)]} of {NUMBER_WORDS[n]}"
        if key == "nkids":
            return NUMBER_WORDS[rng.randint(2, 9)]
        if key == "nsmall":
            return NUMBER_WORDS[rng.randint(2, 12)]
        if key == "nlang":
            return NUMBER_WORDS[rng.randint(3, 8)]
        if key == "nbig":
            return str(rng.choice([10, 15, 20, 30, 40, 50, 60, 80, 100]))
        if key == "nyears":
            return NUMBER_WORDS[rng.randint(2, 12)]
        if key in ("a_trade", "a_trade2"):
            return article(rng.choice(TRADES))
        if key == "trades":
            t = rng.choice(TRADES)
            if t.endswith("man"):
                return t[:-3] + "men"
            return t + ("es" if t.endswith("ss") else "s")
        if key == "parents":
            return rng.choice(PARENT_ADJECTIVES)
        if key == "field":
            return rng.choice(FIELDS_OF_STUDY)
        if key == "topic":
            return rng.choice(TOPICS)
        if key == "title":
            return rng.choice(TITLES)
        if key == "work_kind":
            return rng.choice(WORK_KINDS.get(self.category, WORK_KINDS["other"]))
        if key == "award":
            return rng.choice(AWARDS)
        if key == "org":
            return rng.choice(ORGS)
        if key == "inst":
            return rng.choice(INSTITUTIONS)
        if key == "club":
            return f"{self._place('city', f)} {rng.choice(CLUB_SUFFIXES)}"
        if key == "war":
            last = self.death_year if self.dead else 2023
            wars = [w for w, y in WARS if self.year + 17 <= y <= min(self.year + 60, last)]
            if not wars:
                raise Skip(key)
            return rng.choice(wars)
        if key == "cause":
            return rng.choice(CAUSES)
        if key == "games":
            return rng.choice(GAMES)
        if key == "quality":
            return rng.choice(QUALITIES)
        if key == "building":
            return rng.choice(BUILDINGS)
        if key == "firm":
            return rng.choice(FIRMS)
        if key == "question":
            return rng.choice(QUESTIONS)
        if key == "relative":
            return rng.choice(RELATIVES_F if female else RELATIVES_M)
        if key == "spouse":
            return self.spouse_name()
        if key == "other":
            return self.other_name()
        if key == "vp":
            return rng.choice(VPS).format_map(f)
        raise KeyError(key)

    # -- sentences
    def _render(self, text, first):
        f = Fields(self, first)
        s = text.format_map(f)
        return s[0].upper() + s[1:]

    def _pick(self, items, first, need_city):
        """Weighted choice of a template that renders; items: (weight, flags, text)."""
        pool = []
        for w, flags, text in items:
            if "d" in flags and not self.dead:
                continue
            if "a" in flags and self.dead:
                continue
            if "c" in flags and not need_city:
                continue
            if "f" in flags and not first:
                continue
            if "m" in flags and first:
                continue
            if "s" in flags and self.category not in ("science", "letters"):
                continue
            pool.append((w, text))
        while pool:
            i = self.rng.choices(range(len(pool)), weights=[w for w, _ in pool])[0]
            try:
                return self._render(pool[i][1], first)
            except Skip:
                pool.pop(i)
        raise Skip("no template fits")

    def write(self, n_sentences, answerable, birth_first_prob=0.62):
        """The sentences of the biography, and the index of the birth sentence (or None)."""
        rng = self.rng
        is_city = not self.p.birthplace_is_country
        birth_at = None
        if answerable:
            birth_at = 0 if (n_sentences == 1 or rng.random() < birth_first_prob) \
                else rng.randint(1, n_sentences - 1)
        sentences = [None] * n_sentences
        used_tags = set()
        # the birth sentence and the opening sentence first, then the body in order
        if birth_at is not None:
            sentences[birth_at] = self._pick(BIRTH, birth_at == 0, is_city)
            used_tags |= _tags(sentences[birth_at])
        if birth_at != 0:
            sentences[0] = self._pick(INTRO, True, is_city)
            used_tags |= _tags(sentences[0])
        body = [(w, flags, text) for cat, w, flags, text in BODY
                if (cat == "any" or cat == self.category)
                and not ("d" in flags and not self.dead) and not ("a" in flags and self.dead)]
        for i in range(n_sentences):
            if sentences[i] is not None:
                continue
            while body and sentences[i] is None:
                k = rng.choices(range(len(body)), weights=[b[0] for b in body])[0]
                text = body.pop(k)[2]
                try:
                    s = self._render(text, False)
                except Skip:
                    continue
                tags = _tags(s)
                if tags & used_tags:
                    continue
                used_tags |= tags
                sentences[i] = s
        if birth_at is not None:
            birth_at = sum(1 for s in sentences[:birth_at] if s is not None)
        sentences = [s for s in sentences if s is not None]
        if self.p.name.native and sentences and sentences[0].startswith(self.p.name.full + " "):
            head = self.p.name.full
            rest = sentences[0][len(head):]
            if rest.startswith(" ("):
                rest = f" ({self.p.name.native}; " + rest[2:]
            else:
                rest = f" ({self.p.name.native})" + rest
            sentences[0] = head + rest
        return sentences, birth_at


# phrases that a biography should not repeat ("grew up in X ... grew up in X")
_TAG_PHRASES = ("grew up", "died", "moved to", "studied", "settled", "lived", "educated",
                "emigrated", "childhood", "married", "worked", "trained", "taught", "buried",
                "last years", "career", "based in", "toured", "travelled", "school")


def _tags(sentence):
    return {t for t in _TAG_PHRASES if t in sentence}
