"""Real city and country names of the biography world, each with a region, and their popularity.

The list below is written by hand for this project. Each region lists its places roughly from
the most to the least likely birthplace of a person with an English-language encyclopedia entry;
a trailing `*` marks a country (or constituent country such as "Scotland"), everything else is a
city. `ranked_places()` merges the regions into one global ranking (a region's share of all
births times a Zipf weight inside the region), with London always first. The generator then
gives the place of global rank r a weight proportional to 1 / (r + ZIPF_SHIFT) ** ZIPF_EXPONENT up to
rank ZIPF_KNEE, falling faster (ZIPF_TAIL) after it (make_world._zipf); --even-places weighs all alike.

Places were chosen so that none is an everyday English word that could start a sentence by
accident (no "Reading", "Nice", "Split"), and so that no place is also a first name in the name
pools (no "Florence" as a given name, no "Sofia").
"""
from dataclasses import dataclass

# region code -> (description, share of all births used for the global ranking)
REGIONS = {
    "BRI": ("Britain and Ireland", 0.20),
    "NAM": ("United States and Canada", 0.21),
    "OCE": ("Australia, New Zealand and the Pacific", 0.055),
    "FRA": ("France, Wallonia, Romandy, Luxembourg, Monaco", 0.06),
    "GER": ("Germany, Austria, German-speaking Switzerland", 0.07),
    "NLD": ("Netherlands and Flanders", 0.025),
    "ITA": ("Italy and Malta", 0.05),
    "SPA": ("Spain", 0.025),
    "POR": ("Portugal", 0.008),
    "NOR": ("Nordic countries", 0.04),
    "POL": ("Poland and the Baltic states", 0.035),
    "CZE": ("Czech lands and Slovakia", 0.015),
    "HUN": ("Hungary", 0.017),
    "RUS": ("Russia, Ukraine, Belarus, the Caucasus and Central Asia", 0.04),
    "GRE": ("Greece and Cyprus", 0.012),
    "ROM": ("Romania and Moldova", 0.012),
    "YUG": ("Former Yugoslavia, Bulgaria and Albania", 0.015),
    "TUR": ("Turkey", 0.01),
    "ARA": ("Arab world", 0.02),
    "IRN": ("Iran and Afghanistan", 0.01),
    "ISR": ("Israel", 0.008),
    "SAS": ("South Asia", 0.03),
    "CHN": ("China, Taiwan and Mongolia", 0.02),
    "JPN": ("Japan", 0.012),
    "KOR": ("Korea", 0.006),
    "VIE": ("Vietnam", 0.004),
    "SEA": ("South-East Asia", 0.012),
    "WAF": ("West and Central Africa", 0.01),
    "EAF": ("East Africa", 0.008),
    "SAF": ("Southern Africa", 0.012),
    "LAT": ("Spanish-speaking Latin America", 0.025),
    "BRZ": ("Brazil", 0.01),
    "CAR": ("English-speaking Caribbean", 0.008),
}

# region code -> places, most likely birthplace first; "*" marks a country
_PLACE_TEXT = {
    "BRI": """London, England*, Glasgow, Dublin, Edinburgh, Manchester, Birmingham, Liverpool,
        Belfast, Scotland*, Leeds, Bristol, Sheffield, Ireland*, Cardiff, Wales*,
        Newcastle upon Tyne, Nottingham, Aberdeen, Cork, Leicester, Oxford, Cambridge, Norwich,
        Brighton, Southampton, Plymouth, Bradford, Hull, Coventry, Dundee, Swansea, Portsmouth,
        York, Bath, Exeter, Derby, Stoke-on-Trent, Sunderland, Wolverhampton, Limerick, Galway,
        Inverness, Preston, Bolton, Blackburn, Northampton, Ipswich, Gloucester, Canterbury,
        Chester, Lincoln, Carlisle, Stirling, Derry, Waterford, Kilkenny, Huddersfield,
        Middlesbrough, Wigan, Salford, Oldham, Doncaster, Worcester, Hereford, Durham, Lancaster,
        Colchester, Luton, Paisley, Greenock, Newport, Wrexham, Sligo""",
    "NAM": """New York City, Chicago, Toronto, Philadelphia, Montreal, Boston, Brooklyn,
        Los Angeles, Detroit, Baltimore, San Francisco, Cleveland, Pittsburgh, Washington,
        Vancouver, United States*, Canada*, New Orleans, Cincinnati, Milwaukee, Minneapolis,
        Winnipeg, Ottawa, Buffalo, Seattle, Houston, Dallas, Atlanta, Denver, Rochester, Newark,
        Memphis, Kansas City, Indianapolis, Columbus, Louisville, Portland, Nashville, Richmond,
        Providence, Hartford, Calgary, Edmonton, Halifax, Quebec City, Hamilton, Omaha, Miami,
        Phoenix, San Diego, Sacramento, Oakland, Salt Lake City, Albany, Syracuse, Toledo,
        Dayton, Akron, Tulsa, Oklahoma City, Austin, San Antonio, Honolulu, Anchorage, Charleston,
        Savannah, Jacksonville, Tampa, Orlando, Raleigh, Norfolk, Wilmington, Scranton,
        Springfield, New Haven, Burlington, Des Moines, Saint Paul, Madison, Grand Rapids,
        Lansing, Fort Worth, El Paso, Tucson, Albuquerque, Spokane, Tacoma, Boise, Fresno,
        Long Beach, Pasadena, Berkeley, Saskatoon, Sudbury, Thunder Bay, Moncton, Fredericton,
        Charlottetown, Erie, Peoria, Duluth, Wichita""",
    "OCE": """Sydney, Melbourne, Australia*, Brisbane, Adelaide, Perth, Auckland, New Zealand*,
        Wellington, Christchurch, Hobart, Dunedin, Canberra, Geelong, Ballarat, Bendigo, Darwin,
        Townsville, Launceston, Wollongong, Toowoomba, Cairns, Fiji*, Samoa*, Papua New Guinea*,
        Suva, Napier, Invercargill, Rotorua, Palmerston North""",
    "FRA": """Paris, France*, Lyon, Marseille, Brussels, Bordeaux, Toulouse, Lille, Geneva,
        Strasbourg, Nantes, Belgium*, Rouen, Lausanne, Liège, Montpellier, Grenoble, Reims,
        Le Havre, Dijon, Rennes, Toulon, Saint-Étienne, Metz, Orléans, Tours, Amiens, Limoges,
        Clermont-Ferrand, Avignon, Caen, Brest, Perpignan, Versailles, Charleroi, Namur,
        Luxembourg*, Monaco*, Besançon, Nîmes, Angers, Poitiers, Bayonne""",
    "GER": """Berlin, Vienna, Germany*, Munich, Hamburg, Frankfurt, Cologne, Leipzig, Dresden,
        Stuttgart, Austria*, Düsseldorf, Hanover, Nuremberg, Bremen, Zürich, Graz, Salzburg, 
        Essen, Dortmund, Mannheim, Karlsruhe, Heidelberg, Kassel, Augsburg, Mainz, Wiesbaden,
        Innsbruck, Linz, Basel, Switzerland*, Weimar, Magdeburg, Halle, Chemnitz, Kiel,
        Lübeck, Rostock, Münster, Freiburg, Würzburg, Regensburg, Aachen, Potsdam, Erfurt,
        Göttingen, Bielefeld, Braunschweig, Duisburg, Bochum, Wuppertal, Klagenfurt, Jena""",
    "NLD": """Amsterdam, Rotterdam, The Hague, Holland*, Utrecht, Antwerp, Ghent, Leiden,
        Haarlem, Groningen, Eindhoven, Bruges, Delft, Nijmegen, Maastricht, Arnhem, Leuven,
        Tilburg, Breda, Zwolle, Dordrecht, Mechelen, Enschede, Deventer""",
    "ITA": """Rome, Milan, Naples, Italy*, Turin, Venice, Genoa, Florence, Palermo, Bologna,
        Trieste, Verona, Padua, Catania, Bari, Messina, Parma, Modena, Livorno, Pisa, Siena,
        Ferrara, Bergamo, Brescia, Lucca, Perugia, Cagliari, Ravenna, Salerno, Vicenza, Udine,
        Como, Reggio Calabria, Taranto, Ancona, Trento, Malta*, Valletta""",
    "SPA": """Madrid, Barcelona, Spain*, Seville, Valencia, Bilbao, Zaragoza, Málaga, Granada,
        Córdoba, Salamanca, Valladolid, San Sebastián, Palma, Cádiz, Oviedo, Santander, Murcia,
        Alicante, Pamplona, Gijón, Vigo, A Coruña, Burgos, Tarragona, Girona""",
    "POR": """Lisbon, Porto, Portugal*, Coimbra, Braga, Funchal, Setúbal, Évora, Aveiro""",
    "NOR": """Stockholm, Oslo, Copenhagen, Helsinki, Gothenburg, Bergen, Sweden*, Norway*,
        Denmark*, Finland*, Malmö, Aarhus, Reykjavík, Uppsala, Trondheim, Turku, Tampere,
        Stavanger, Odense, Iceland*, Lund, Aalborg, Västerås, Örebro, Linköping, Tromsø, Drammen,
        Kristiansand, Vaasa, Oulu, Norrköping, Helsingborg, Esbjerg, Akureyri, Jönköping""",
    "POL": """Warsaw, Kraków, Poland*, Łódź, Wrocław, Poznań, Gdańsk, Vilnius, Riga, Tallinn,
        Lithuania*, Latvia*, Estonia*, Katowice, Lublin, Szczecin, Bydgoszcz, Kaunas, Tartu,
        Białystok, Częstochowa, Toruń, Radom, Kielce, Rzeszów, Opole, Gdynia, Sopot, Liepāja,
        Daugavpils, Klaipėda""",
    "CZE": """Prague, Brno, Bratislava, Slovakia*, Ostrava, Plzeň, Olomouc, Košice, Bohemia*,
        Moravia*, České Budějovice, Liberec, Žilina""",
    "HUN": """Budapest, Hungary*, Debrecen, Szeged, Pécs, Győr, Miskolc, Kecskemét,
        Székesfehérvár, Sopron, Eger""",
    "RUS": """Moscow, Saint Petersburg, Kyiv, Odesa, Russia*, Ukraine*, Kharkiv, Minsk, Tbilisi,
        Yerevan, Baku, Lviv, Kazan, Novosibirsk, Yekaterinburg, Samara, Rostov-on-Don,
        Nizhny Novgorod, Vladivostok, Georgia*, Armenia*, Belarus*, Tashkent, Almaty, Omsk,
        Irkutsk, Perm, Volgograd, Voronezh, Dnipro, Vitebsk, Grodno, Gomel, Bishkek, Tomsk,
        Smolensk, Yaroslavl, Saratov, Krasnoyarsk, Murmansk, Kaliningrad, Kazakhstan*""",
    "GRE": """Athens, Greece*, Thessaloniki, Cyprus*, Patras, Heraklion, Nicosia, Piraeus,
        Larissa, Volos, Ioannina, Limassol, Chania, Kalamata""",
    "ROM": """Bucharest, Romania*, Cluj-Napoca, Iași, Timișoara, Brașov, Constanța, Sibiu,
        Chișinău, Moldova*, Craiova, Oradea, Galați""",
    "YUG": """Belgrade, Zagreb, Sofia, Ljubljana, Sarajevo, Serbia*, Croatia*, Bulgaria*,
        Skopje, Tirana, Albania*, Plovdiv, Varna, Novi Sad, Niš, Rijeka, Dubrovnik, Podgorica,
        Mostar, Montenegro*, Slovenia*, Burgas, Ruse, Osijek, Maribor, Banja Luka, Durrës""",
    "TUR": """Istanbul, Turkey*, Ankara, Izmir, Bursa, Adana, Konya, Trabzon, Antalya,
        Eskişehir, Gaziantep""",
    "ARA": """Cairo, Beirut, Baghdad, Egypt*, Lebanon*, Damascus, Alexandria, Aleppo, Syria*,
        Iraq*, Amman, Casablanca, Tunis, Algiers, Morocco*, Algeria*, Tunisia*, Jordan*, Basra,
        Mosul, Riyadh, Jeddah, Kuwait*, Dubai, Doha, Muscat, Sanaa, Yemen*, Saudi Arabia*,
        Oran, Rabat, Fez, Marrakesh, Tripoli, Libya*, Benghazi, Khartoum, Sudan*""",
    "IRN": """Tehran, Iran*, Tabriz, Isfahan, Shiraz, Mashhad, Kabul, Afghanistan*, Herat,
        Qom, Rasht, Kerman""",
    "ISR": """Jerusalem, Tel Aviv, Israel*, Haifa, Beersheba, Nazareth, Netanya""",
    "SAS": """India*, Mumbai, Kolkata, Delhi, Lahore, Chennai, Karachi, Pakistan*, Bangalore,
        Hyderabad, Dhaka, Bangladesh*, Colombo, Sri Lanka*, Kathmandu, Nepal*, Ahmedabad, Pune,
        Lucknow, Kanpur, Jaipur, Amritsar, Peshawar, Rawalpindi, Islamabad, Chittagong, Kochi,
        Madurai, Nagpur, Patna, Varanasi, Agra, Mysore, Kandy, Surat, Bhopal, Quetta, Multan""",
    "CHN": """Shanghai, Beijing, Hong Kong, China*, Taipei, Taiwan*, Guangzhou, Tianjin, Nanjing,
        Wuhan, Chengdu, Harbin, Shenyang, Hangzhou, Xi'an, Chongqing, Qingdao, Dalian, Suzhou,
        Xiamen, Macau, Kaohsiung, Tainan, Mongolia*, Ulaanbaatar, Changsha, Kunming""",
    "JPN": """Tokyo, Japan*, Osaka, Kyoto, Yokohama, Kobe, Nagoya, Hiroshima, Nagasaki, Sapporo,
        Fukuoka, Sendai, Kanazawa, Okayama, Kumamoto""",
    "KOR": """Seoul, South Korea*, Busan, Pyongyang, Incheon, Daegu, Gwangju, Daejeon""",
    "VIE": """Hanoi, Ho Chi Minh City, Vietnam*, Huế, Haiphong, Da Nang""",
    "SEA": """Manila, Singapore, Bangkok, Jakarta, Kuala Lumpur, Indonesia*, Thailand*,
        Malaysia*, Penang, Surabaya, Bandung, Yogyakarta, Cebu, Davao, Yangon, Burma*,
        Phnom Penh, Cambodia*, Vientiane, Laos*, Chiang Mai, Medan, Semarang, Ipoh, Malacca""",
    "WAF": """Lagos, Nigeria*, Accra, Ghana*, Ibadan, Dakar, Senegal*, Abidjan, Kano, Enugu,
        Kumasi, Douala, Yaoundé, Cameroon*, Kinshasa, Bamako, Freetown, Sierra Leone*,
        Monrovia, Liberia*, Conakry, Lomé, Cotonou, Benin City, Port Harcourt""",
    "EAF": """Nairobi, Kenya*, Addis Ababa, Ethiopia*, Kampala, Uganda*, Dar es Salaam,
        Tanzania*, Mombasa, Kigali, Rwanda*, Asmara, Mogadishu, Somalia*, Zanzibar""",
    "SAF": """Johannesburg, Cape Town, South Africa*, Durban, Pretoria, Harare, Zimbabwe*,
        Bulawayo, Port Elizabeth, Lusaka, Zambia*, Bloemfontein, Pietermaritzburg, Windhoek,
        Namibia*, Gaborone, Botswana*, Maputo, Mozambique*, Luanda, Angola*, Madagascar*,
        Antananarivo, Mauritius*, Malawi*, Blantyre""",
    "LAT": """Buenos Aires, Mexico City, Havana, Mexico*, Argentina*, Cuba*, Santiago, Chile*,
        Lima, Peru*, Bogotá, Colombia*, Caracas, Venezuela*, Montevideo, Uruguay*, Guadalajara,
        Monterrey, Puerto Rico*, San Juan, Rosario, Medellín, Cali, Quito, Ecuador*, Guayaquil,
        La Paz, Bolivia*, Asunción, Paraguay*, Santo Domingo, Dominican Republic*, San José,
        Costa Rica*, Panama*, Guatemala*, Managua, Tegucigalpa, San Salvador, Valparaíso,
        Concepción, Arequipa, Puebla, Veracruz, Mérida, Oaxaca, Barranquilla, Cartagena,
        Maracaibo""",
    "BRZ": """Rio de Janeiro, São Paulo, Brazil*, Recife, Porto Alegre, Belo Horizonte, Curitiba,
        Fortaleza, Belém, Manaus, Salvador da Bahia, Florianópolis, Campinas""",
    "CAR": """Kingston, Jamaica*, Trinidad*, Port of Spain, Barbados*, Bridgetown, Nassau,
        Guyana*, Georgetown, Haiti*, Port-au-Prince, Bermuda*, Montego Bay""",
}

# Inside a region the place of local rank k (1-based) gets weight 1 / (k + 1.5) ** 1.1 for the
# global ranking; the ranking is only an ordering, the final frequencies come from the Zipf
# weights of the global rank (see make_world).
_LOCAL_SHIFT = 1.5
_LOCAL_EXPONENT = 1.1


# these always lead the global ranking, in this order
HEAD = ("London", "Paris")


@dataclass(frozen=True)
class Place:
    name: str
    region: str
    is_country: bool


def _parse():
    places = []
    seen = {}
    for region, text in _PLACE_TEXT.items():
        if region not in REGIONS:
            raise ValueError(f"unknown region {region}")
        for item in text.replace("\n", " ").split(","):
            item = item.strip()
            if not item:
                continue
            is_country = item.endswith("*")
            name = item.rstrip("*").strip()
            if name in seen:
                raise ValueError(f"place {name!r} listed twice ({seen[name]}, {region})")
            seen[name] = region
            places.append((region, Place(name, region, is_country)))
    return places


def ranked_places():
    """All places, most popular first (London, then Paris): a list of `Place`."""
    parsed = _parse()
    by_region = {}
    for region, place in parsed:
        by_region.setdefault(region, []).append(place)
    scored = []
    order = 0
    for region, plist in by_region.items():
        weights = [1.0 / (k + 1 + _LOCAL_SHIFT) ** _LOCAL_EXPONENT for k in range(len(plist))]
        total = sum(weights)
        share = REGIONS[region][1]
        for place, w in zip(plist, weights):
            scored.append((-share * w / total, order, place))
            order += 1
    scored.sort(key=lambda t: (t[0], t[1]))
    ranked = [p for _, _, p in scored]
    head = [next(p for p in ranked if p.name == name) for name in HEAD]
    return head + [p for p in ranked if p.name not in HEAD]


def conflicts(a, b):
    """True when one place name contains the other (so mentioning one would 'state' the other)."""
    return a in b or b in a
